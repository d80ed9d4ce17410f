"""The project's IAM as code: the policies the stacks attach (the collector's, Karpenter's, the nodes'), the
nightly role's deploy policies and its permissions boundary, the VPC CNI's tags they rest on, and their
offline analysis (an IAM policy evaluator and the escalation findings the tests hold at zero). Below infra/,
which builds the roles from it; imports only the product's ground floor."""
