// Karpenter for the local rehearsal target: Karpenter core's controllers with the kwok cloud provider (as
// sigs.k8s.io/karpenter/kwok's own main runs them), plus the AWS provider's real spot-interruption
// controller (github.com/aws/karpenter-provider-aws/pkg/controllers/interruption) reading an SQS queue.
//
// The interruption controller finds NodeClaims and Nodes only through the field indexes "status.instanceID"
// and "spec.instanceID" that the AWS operator registers from aws:///zone/i-... provider IDs. kwok nodes have
// kwok://NAME provider IDs, so this main registers the same two indexes with a stable EC2-shaped instance id
// per kwok node: "i-" + the first 17 hex digits of sha256(NAME). The harness computes the same id
// (facts.names.kwok_instance_id) to address a node in the EventBridge message it puts on the queue.
//
// INTERRUPTION_QUEUE (a queue name, as settings.interruptionQueue on AWS) switches the controller on; the
// AWS SDK reads AWS_ENDPOINT_URL, AWS_REGION and credentials from the environment, so locally the queue
// lives on a moto server. Without INTERRUPTION_QUEUE this is Karpenter's kwok provider unchanged.
//
// `karpenter-kwok instance-profile -cluster C -region R -nodeclass N -uid U -role ROLE [-tag k=v ...]` starts
// nothing: it prints, as JSON, the instance profile the AWS provider's nodeclass controller would create for
// that EC2NodeClass, computed by the provider's own code at the pinned version (EC2NodeClass.InstanceProfileName,
// InstanceProfileTags, LegacyInstanceProfileName and instanceprofile.FormatPath, as
// pkg/controllers/nodeclass/instanceprofile.go and controller.go call them), so tests/infra can evaluate those
// exact names against our IAM policy and boundary.
//
// `karpenter-kwok dra-devices TYPE...` starts nothing either: it prints, as JSON, the devices the AWS provider
// expects NVIDIA's DRA driver to publish on each instance type (pkg/providers/nvidiadra, from its scraped
// drametadata: what Karpenter sizes a node by when settings.enableDRA is on), so tests can hold the simulated
// driver's devices to the same attributes and memory.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/samber/lo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/awslabs/operatorpkg/controller"

	awsv1 "github.com/aws/karpenter-provider-aws/pkg/apis/v1"
	"github.com/aws/karpenter-provider-aws/pkg/controllers/interruption"
	"github.com/aws/karpenter-provider-aws/pkg/providers/instanceprofile"
	"github.com/aws/karpenter-provider-aws/pkg/providers/nvidiadra"
	awssqs "github.com/aws/karpenter-provider-aws/pkg/providers/sqs"
	kwok "sigs.k8s.io/karpenter/kwok/cloudprovider"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/overlay"
	"sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/node/health"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator"
)

const kwokPrefix = "kwok://"

// instanceID maps a kwok provider ID to the EC2-shaped id the interruption messages carry.
func instanceID(providerID string) string {
	name := strings.TrimPrefix(providerID, kwokPrefix)
	if name == providerID || name == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(name))
	return "i-" + hex.EncodeToString(sum[:])[:17]
}

func indexes(o string) []string {
	if id := instanceID(o); id != "" {
		return []string{id}
	}
	return nil
}

type tagFlags map[string]string

func (t tagFlags) String() string { return fmt.Sprint(map[string]string(t)) }
func (t tagFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("tag %q: expected key=value", v)
	}
	t[k] = val
	return nil
}

// instanceProfile prints what the nodeclass controller would create for the EC2NodeClass the flags describe.
func instanceProfile(args []string) error {
	fs := flag.NewFlagSet("instance-profile", flag.ContinueOnError)
	cluster := fs.String("cluster", "", "cluster name (settings.clusterName)")
	region := fs.String("region", "", "the controller's region")
	name := fs.String("nodeclass", "", "the EC2NodeClass's metadata.name")
	uid := fs.String("uid", "", "the EC2NodeClass's metadata.uid")
	role := fs.String("role", "", "the EC2NodeClass's spec.role")
	tags := tagFlags{}
	fs.Var(tags, "tag", "spec.tags entry key=value (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for flagName, v := range map[string]string{"cluster": *cluster, "region": *region, "nodeclass": *name, "uid": *uid, "role": *role} {
		if v == "" {
			return fmt.Errorf("-%s is required", flagName)
		}
	}
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: *name, UID: types.UID(*uid)},
		Spec:       awsv1.EC2NodeClassSpec{Role: *role, Tags: tags},
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		// pkg/controllers/nodeclass/instanceprofile.go: the name and path of the profile Create makes
		"name": nc.InstanceProfileName(*cluster, *region),
		"path": instanceprofile.FormatPath("karpenter", *region, *cluster, string(nc.UID)),
		"tags": nc.InstanceProfileTags(*cluster, *region),
		"role": nc.InstanceProfileRole(),
		// pkg/controllers/nodeclass/controller.go: what deletion lists and deletes
		"cleanup_path_prefix": instanceprofile.FormatPath("karpenter", *region, *cluster, string(nc.UID)),
		"legacy_name":         nc.LegacyInstanceProfileName(*cluster, *region),
		// pkg/controllers/nodeclass/garbagecollection/controller.go: the garbage collector's list prefix
		"gc_path_prefix": instanceprofile.FormatPath("karpenter", *region, *cluster),
	})
}

// draDevices prints, per instance type, the devices of the NVIDIA driver's ResourceSlice template the AWS provider
// resolves for it (no consumable-capacity mode: whole cards); a type it has no metadata for maps to null.
func draDevices(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("name at least one instance type")
	}
	its := lo.Map(args, func(name string, _ int) *cloudprovider.InstanceType { return &cloudprovider.InstanceType{Name: name} })
	resolved := nvidiadra.NewDefaultProvider().ResolveDynamicResources(context.Background(), its, nil)
	type device struct {
		Name       string         `json:"name"`
		Attributes map[string]any `json:"attributes"`
		Capacity   map[string]any `json:"capacity"`
	}
	out := map[string][]device{}
	for _, name := range args {
		out[name] = nil
		for _, template := range resolved[name].ResourceSliceTemplates {
			for _, d := range template.Devices {
				attributes, capacity := map[string]any{}, map[string]any{}
				for k, v := range d.Attributes {
					attributes[string(k)] = v
				}
				for k, v := range d.Capacity {
					capacity[string(k)] = v
				}
				out[name] = append(out[name], device{Name: d.Name.Value(), Attributes: attributes, Capacity: capacity})
			}
		}
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "dra-devices" {
		if err := draDevices(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "dra-devices:", err)
			os.Exit(2)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "instance-profile" {
		if err := instanceProfile(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "instance-profile:", err)
			os.Exit(2)
		}
		return
	}
	ctx, op := operator.NewOperator()
	lo.Must0(op.Manager.GetFieldIndexer().IndexField(ctx, &karpv1.NodeClaim{}, "status.instanceID", func(o client.Object) []string {
		return indexes(o.(*karpv1.NodeClaim).Status.ProviderID)
	}), "indexing NodeClaims by instance id")
	lo.Must0(op.Manager.GetFieldIndexer().IndexField(ctx, &corev1.Node{}, "spec.instanceID", func(o client.Object) []string {
		return indexes(o.(*corev1.Node).Spec.ProviderID)
	}), "indexing Nodes by instance id")

	instanceTypes, err := kwok.ConstructInstanceTypes(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "failed constructing instance types")
	}
	undecorated := kwok.NewCloudProvider(ctx, op.GetClient(), instanceTypes)
	cloudProvider := overlay.Decorate(undecorated, op.GetClient(), op.InstanceTypeStore)
	repairPolicyMatcher := lo.Must(health.NewRepairPolicyMatcher(ctx, cloudProvider))
	clusterState := state.NewCluster(op.Clock, op.GetClient(), cloudProvider, state.WithRepairPolicyMatcher(repairPolicyMatcher))
	ctrls := controllers.NewControllers(ctx, op.Manager, op.Clock, op.GetClient(), op.EventRecorder,
		cloudProvider, undecorated, clusterState, op.InstanceTypeStore, op.PredictionStore)
	if queue := os.Getenv("INTERRUPTION_QUEUE"); queue != "" {
		ctrls = append(ctrls, interruptionController(ctx, op, cloudProvider, queue))
	}
	op.WithControllers(ctx, ctrls...).Start(ctx)
}

func interruptionController(ctx context.Context, op *operator.Operator, cp cloudprovider.CloudProvider, queue string) controller.Controller {
	cfg := lo.Must(awsconfig.LoadDefaultConfig(ctx))
	api := sqsapi.NewFromConfig(cfg)
	out := lo.Must(api.GetQueueUrl(ctx, &sqsapi.GetQueueUrlInput{QueueName: &queue}))
	provider := lo.Must(awssqs.NewDefaultProvider(api, *out.QueueUrl))
	log.FromContext(ctx).Info("interruption controller watching queue", "queue", queue, "url", *out.QueueUrl)
	// No offerings cache: the handler checks it for nil (v1.15 dropped the capacity-reservation provider argument;
	// a reservation interruption now marks the offerings cache, which we do not have, so it is skipped too).
	return interruption.NewController(op.GetClient(), op.Clock, cp, op.EventRecorder, provider, api, nil)
}
