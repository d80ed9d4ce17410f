"""The local target's binaries built from Go modules, pinned (`versions`) and cached outside the clone
(`binaries`), and the Go main of ours that one of them runs (`karpenter/`: Karpenter core with the kwok
provider and the AWS provider's interruption controller)."""
