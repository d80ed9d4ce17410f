"""One model of the objects gpu-finops reasons about, read once for every room: a Kueue Workload's lifecycle
(`workload`), a Karpenter NodeClaim's (`nodeclaim`), and a held GPU, device -> holder -> share (`holding`).
What breaks an invariant is one `violation.Violation`.

Each module holds the object's condition types and the small named predicates over them (after Kueue's
`pkg/workload`: `HasQuotaReservation`, `IsAdmitted`, `IsEvicted`, composed elsewhere), the one reader of its
API shape, and the invariants any observed history of it must satisfy, each returning what broke it. The
claim checkers (`assertions/`), the acts' observers, the diagnosis, the twin and the collector's holdings
import these; none of them reads a condition type by its string (tests/gpu_finops/model holds that).
Imports only the ground floor (`gpu_finops.facts`)."""
