"""The nightly run's guard: the cost ceiling before `make up` (quota-bounded GPU nodes at on-demand, the
control plane's EKS support tier, the fixed services), the budget refusal, and the deadline that stops `up`
and the acts, with their whole process group, in time for teardown (`gpu-finops guard`)."""
