"""`gpu-finops cost export --format parquet --out DIR|s3://bucket/prefix [--focus-version 1.2|1.3]`: the cost
table as a FOCUS dataset split per tenant, partitioned by billing period (gpu_finops/cost/export.py says the layout)."""

from __future__ import annotations

import argparse
import os

from gpu_finops.clients.terminal import console as wide_console
from gpu_finops.cost.cli_common import add_store_argument, add_window_arguments, check_window
from gpu_finops.cost.export import write_dataset
from gpu_finops.cost.focus import FOCUS_VERSION, FOCUS_VERSIONS, FocusContext, focus_dataset
from gpu_finops.cost.holdings_record import STATUS_NO_HOLDINGS
from gpu_finops.cost.s3_access import split_s3
from gpu_finops.cost.store import open_store
from gpu_finops.facts import arguments
from gpu_finops.facts.errors import CheckFailed, UsageError
from gpu_finops.facts.names import PROJECT


def _holdings_summary(holdings) -> str:
    if isinstance(holdings, dict):
        return f"GPU holdings recorded for {len(holdings)} node-interval(s)"
    return f"{len(holdings)} GPU holding(s) applied to every interval"


def _destination(text: str) -> str:
    """--out: a directory path, or an s3:// URL that names a bucket (checked before the store is read)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    if text[:5].lower() == "s3://" and not text.startswith("s3://"):  # else a local folder named "S3:"
        raise argparse.ArgumentTypeError(f"{text[:80]!r}: write the scheme as s3:// (lower case)")
    if text.startswith("s3://"):
        try:
            split_s3(text)
        except UsageError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_export_parser(sub: argparse._SubParsersAction) -> None:
    export = sub.add_parser("export", help=f"write the FOCUS {FOCUS_VERSION} dataset, split per tenant")
    add_store_argument(export)
    export.add_argument("--format", choices=["parquet"], default="parquet", help="only parquet (the default)")
    export.add_argument(
        "--focus-version",
        choices=FOCUS_VERSIONS,
        default=FOCUS_VERSION,
        help=f"FOCUS version (default {FOCUS_VERSION}); 1.3 adds the split cost allocation columns "
        "(AllocatedMethodId, AllocatedMethodDetails, AllocatedResourceId/Name, AllocatedTags) and moves the "
        "tenant from Tags to AllocatedTags",
    )
    export.add_argument("--out", required=True, type=_destination, help="a directory or s3://bucket/prefix")
    add_window_arguments(export)
    export.add_argument(
        "--holdings",
        default="recorded",
        help="who held the GPUs: 'recorded' (default: what the collector recorded per interval; an interval "
        "without a record is one unallocated row, x_Status no-holdings), 'kube' (pods in the cluster now; "
        "$KUBECONFIG or --kubeconfig), file:PATH (JSON from gpu_finops.cost.gpu_holdings), or 'none' (every "
        "node-interval is one unallocated row, x_Status no-holdings)",
    )
    export.add_argument("--kubeconfig", default=None)
    export.add_argument(
        "--billing-account-id",
        type=arguments.printable_text_from("GPU_FINOPS_BILLING_ACCOUNT_ID"),
        default=os.environ.get("GPU_FINOPS_BILLING_ACCOUNT_ID", "unknown"),
        help="BillingAccountId (default $GPU_FINOPS_BILLING_ACCOUNT_ID, else 'unknown')",
    )
    export.add_argument(
        "--billing-account-name",
        type=arguments.printable_text_from("GPU_FINOPS_BILLING_ACCOUNT_NAME"),
        default=os.environ.get("GPU_FINOPS_BILLING_ACCOUNT_NAME", PROJECT),
        help=f"BillingAccountName (default $GPU_FINOPS_BILLING_ACCOUNT_NAME, else {PROJECT!r})",
    )
    export.add_argument(
        "--provider",
        type=arguments.printable_text,
        default="AWS",
        help="ProviderName, PublisherName, InvoiceIssuerName",
    )


def _holdings(spec: str, kubeconfig: str | None, store):
    from gpu_finops.cost import gpu_holdings

    if spec == "recorded":
        return store.holdings()
    if spec == "none":
        return {}
    if spec.startswith("file:"):
        return gpu_holdings.read_holdings_file(spec.removeprefix("file:"))
    if spec == "kube":
        from gpu_finops.clients.kube import Kube

        return gpu_holdings.gpu_holdings(Kube.from_kubeconfig(kubeconfig))
    raise UsageError(f"--holdings must be 'recorded', 'none', 'kube' or file:PATH, got {spec!r}")


def run_export(args: argparse.Namespace) -> int:
    check_window(args)
    console = wide_console()
    store = open_store(args.store, read_only=True)  # the export reads the store, never writes it
    records = store.records(since=args.since, until=args.until)
    if not records:
        raise CheckFailed(
            f"no cost records in {args.store}: nothing to export; run `gpu-finops collect` first"
        )
    holdings = _holdings(args.holdings, args.kubeconfig, store)
    ctx = FocusContext(args.billing_account_id, args.billing_account_name, provider=args.provider)
    dataset = focus_dataset(records, holdings, ctx, args.focus_version)
    for w in write_dataset(dataset, args.out):
        console.print(f"{w.path}: {w.rows} row(s)")
    console.print(
        f"FOCUS {dataset.version}: {len(dataset.rows)} row(s) from {len(records) - len(dataset.unpriced)} priced "
        f"node-interval(s), {_holdings_summary(holdings)}"
    )
    unknown = [r for r in dataset.rows if r["x_Status"] == STATUS_NO_HOLDINGS]
    if unknown:
        console.print(
            f"[yellow]{len(unknown)} node-interval(s) had no GPU holdings recorded[/yellow]: each is one "
            f"unallocated row with x_Status {STATUS_NO_HOLDINGS} (run the collector with --holdings kube)"
        )
    if dataset.unpriced:
        console.print(
            f"[yellow]{len(dataset.unpriced)} interval(s) had no price[/yellow] and are not FOCUS rows:"
        )
        for r in dataset.unpriced:
            console.print(f"  {r.ResourceName} {r.ChargePeriodStart}: {r.x_Status}: {r.x_Message or ''}")
    return 0
