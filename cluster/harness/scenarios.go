package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Two nodes, never joined by a kubelet: Pods stay Pending, which is all the
// policy needs, and a DaemonSet makes one Pod each.
var nodes = []string{"node-1", "node-2"}

func (h *harness) prepare() error {
	for _, node := range nodes {
		manifest := fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":%q,"labels":{"kubernetes.io/hostname":%q}}}`, node, node)
		if _, err := h.kubectlIn(manifest, "create", "-f", "-"); err != nil {
			return err
		}
		// The API server taints a new Node not-ready (TaintNodesByCondition)
		// until its kubelet reports it Ready and the node lifecycle controller
		// lifts the taint; there is no kubelet here, so lift it as that
		// controller would. A DaemonSet makes no Pod for a node so tainted.
		if _, err := h.kubectl("taint", "node", node, "node.kubernetes.io/not-ready:NoSchedule-"); err != nil {
			return err
		}
	}
	namespaces := []string{"shop", "limited", group.namespace}
	for _, namespace := range namespaces {
		if _, err := h.kubectl("create", "namespace", namespace); err != nil {
			return err
		}
	}
	// A Pod is admitted only once its namespace's `default` service account
	// exists, which the serviceaccount controller makes.
	return eventually(60*time.Second, func() error {
		for _, namespace := range namespaces {
			if _, err := h.kubectl("get", "serviceaccount", "default", "-n", namespace); err != nil {
				return err
			}
		}
		return nil
	})
}

func (h *harness) manifests(dir string) string {
	return filepath.Join(h.root, "cluster/manifests", dir)
}

func (h *harness) beforeThePolicy() error {
	h.must("apply", "-f", h.manifests("before"))
	return h.waitPods("shop", "app in (legacy,retired,retired-agent)", 2+len(nodes))
}

// waitPods waits until count Pods that match selector exist and are not
// being deleted.
func (h *harness) waitPods(namespace, selector string, count int) error {
	return h.waitPodsAtLeast(namespace, selector, count, count)
}

// waitPodsAtLeast waits for between least and most live Pods: without a
// kubelet no Pod becomes ready, so a rollout leaves its old ReplicaSet's
// Pods in place beside the new one's.
func (h *harness) waitPodsAtLeast(namespace, selector string, least, most int) error {
	return eventually(90*time.Second, func() error {
		list, err := h.getJSON("get", "pods", "-n", namespace, "-l", selector)
		if err != nil {
			return err
		}
		live := 0
		for _, item := range items(list) {
			if item["metadata"].(map[string]any)["deletionTimestamp"] == nil {
				live++
			}
		}
		if live < least || live > most {
			return fmt.Errorf("%d Pods match %q in %s, want %d to %d", live, selector, namespace, least, most)
		}
		return nil
	})
}

func items(list map[string]any) []map[string]any {
	var out []map[string]any
	raw, _ := list["items"].([]any)
	for _, item := range raw {
		if object, ok := item.(map[string]any); ok {
			out = append(out, object)
		}
	}
	return out
}

// registerWebhooks starts one webhook a policy (policy-runner serve, unless
// an external one is given) and registers them as Kubewarden's controller
// would: metadata.yml's rules, failurePolicy Fail, sideEffects None,
// matchPolicy Equivalent, and the example policy's namespaceSelector (the group's
// namespace left out), or the group's.
func (h *harness) registerWebhooks() error {
	var metadata struct {
		Rules []map[string]any `json:"rules"`
	}
	if err := h.readYAML("metadata.yml", &metadata); err != nil {
		return err
	}
	for _, rule := range metadata.Rules {
		rule["scope"] = "*"
	}
	caBundle := h.ca.pem
	urls := map[string]string{}
	h.webhooks = map[string]string{}
	h.webhookBase = map[string]string{}
	// An object created before now is one the policy never judged: a
	// second apart, since creation times count whole seconds.
	time.Sleep(time.Second)
	h.registered = time.Now().Truncate(time.Second)
	if h.external != "" {
		bundle, err := os.ReadFile(h.externalCA)
		if err != nil {
			return err
		}
		caBundle = bundle
		for _, p := range allPolicies() {
			h.webhookBase[p.id] = strings.TrimSuffix(h.external, "/")
			urls[p.id] = h.webhookBase[p.id] + "/validate/" + p.id
		}
	} else {
		cert, key, err := h.ca.serving(h.work, "webhook", "127.0.0.1")
		if err != nil {
			return err
		}
		for _, p := range allPolicies() {
			record := filepath.Join(h.work, "reviews-"+p.id+".jsonl")
			policy := []string{"--settings-json", p.settings}
			if p.manifest != "" {
				policy = []string{"--policy", filepath.Join(h.root, p.manifest)}
			}
			base, err := h.serveWebhook(p.id, h.module, cert, key, append(policy, "--record", record)...)
			if err != nil {
				return err
			}
			urls[p.id] = base + "/validate/" + p.id
			h.webhookBase[p.id] = base
			h.webhooks[p.id] = record
		}
	}
	var webhooks []map[string]any
	for _, p := range allPolicies() {
		selector := map[string]any{"matchExpressions": []map[string]any{{
			"key": "kubernetes.io/metadata.name", "operator": "NotIn",
			"values": []string{"kube-system", group.namespace},
		}}}
		if p.namespace != "" {
			selector = map[string]any{"matchLabels": map[string]string{"kubernetes.io/metadata.name": p.namespace}}
		}
		webhooks = append(webhooks, map[string]any{
			"name": p.id + ".annotations-policy.test",
			"clientConfig": map[string]any{
				"url":      urls[p.id],
				"caBundle": base64.StdEncoding.EncodeToString(caBundle),
			},
			"rules":                   metadata.Rules,
			"failurePolicy":           "Fail",
			"sideEffects":             "None",
			"matchPolicy":             "Equivalent",
			"admissionReviewVersions": []string{"v1"},
			"timeoutSeconds":          10,
			"namespaceSelector":       selector,
		})
	}
	configuration, _ := json.Marshal(map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       "ValidatingWebhookConfiguration",
		"metadata":   map[string]any{"name": "annotations-policy"},
		"webhooks":   webhooks,
	})
	if _, err := h.kubectlIn(string(configuration), "create", "-f", "-"); err != nil {
		return err
	}
	// The API server picks the configuration up within a second or so: wait
	// until a dry run of a Deployment without its owner is refused.
	return eventually(30*time.Second, func() error {
		out, err := h.kubectl("create", "--dry-run=server", "-f", h.manifests("refused/no-owner.yaml"))
		if err == nil || !strings.Contains(out, "lacks required annotations") {
			return fmt.Errorf("the webhooks are not called yet: %s", strings.TrimSpace(out))
		}
		return nil
	})
}

// trustingTransport is a transport that trusts the harness's CA: the
// API server's and the webhooks' certificates.
func (h *harness) trustingTransport() *http.Transport {
	pool := x509.NewCertPool()
	pool.AddCert(h.ca.cert)
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
}

// ownWebhooks says whether a scenario that serves its own webhooks with
// policy-runner serve, running the evaluator's test policies, can run:
// false, saying it is skipped, with --webhook-url and no --runner; an
// error without --test-policies.
func (h *harness) ownWebhooks() (bool, error) {
	if h.runner == "" {
		fmt.Println("   skipped: --webhook-url without --runner, and this scenario serves its own webhooks with policy-runner serve")
		return false, nil
	}
	if h.testPolicies == "" {
		return false, fmt.Errorf("no --test-policies: cluster/run builds the evaluator's test policies and names where")
	}
	return true, nil
}

// serveWebhook starts policy-runner serve for module on a free port, with
// the serving certificate and key and the policy's arguments (its settings
// or manifest, and any other of serve's flags), and waits until it answers:
// its base URL.
func (h *harness) serveWebhook(id, module, cert, key string, args ...string) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	served, err := h.start("webhook-"+id, h.runner, append(append([]string{"serve", module}, args...),
		"--listen", listen, "--cert", cert, "--key", key)...)
	if err != nil {
		return "", err
	}
	base := "https://" + listen
	return base, h.waitServed(served, base)
}

func (h *harness) waitServed(served *process, base string) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: h.trustingTransport()}
	return eventually(30*time.Second, func() error {
		if done, err := served.exited(); done {
			return fmt.Errorf("%s exited (%v); see %s", served.name, err, served.log)
		}
		resp, err := client.Get(base + "/readiness")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
}

// applyWorkloads applies one workload of each kind the policy covers and
// waits until their controllers have made what they make.
func (h *harness) applyWorkloads() error {
	h.must("apply", "-f", h.manifests("apply"))
	var errs []string
	for _, wait := range []struct {
		selector string
		count    int
	}{{"app=web", 2}, {"app=agent", len(nodes)}, {"app=db", 1}, {"app=classic", 2}, {"job-name=render", 2}} {
		if err := h.waitPods("shop", wait.selector, wait.count); err != nil {
			errs = append(errs, err.Error())
		}
	}
	// The CronJob runs at the next minute.
	if err := eventually(90*time.Second, func() error {
		jobs, err := h.owned("shop", "jobs", "CronJob", "tick")
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return fmt.Errorf("the CronJob tick has made no Job")
		}
		pods, err := h.owned("shop", "pods", "Job", name(jobs[0]))
		if err != nil {
			return err
		}
		if len(pods) == 0 {
			return fmt.Errorf("the Job %s has made no Pod", name(jobs[0]))
		}
		return nil
	}); err != nil {
		errs = append(errs, err.Error())
	}
	if _, err := h.kubectl("get", "pvc", "data-db-0", "-n", "shop"); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func name(object map[string]any) string {
	return object["metadata"].(map[string]any)["name"].(string)
}

// owned lists the objects of a resource whose controller is the one named.
func (h *harness) owned(namespace, resource, kind, owner string) ([]map[string]any, error) {
	list, err := h.getJSON("get", resource, "-n", namespace)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, item := range items(list) {
		refs, _ := item["metadata"].(map[string]any)["ownerReferences"].([]any)
		for _, ref := range refs {
			r := ref.(map[string]any)
			if r["kind"] == kind && r["name"] == owner {
				out = append(out, item)
			}
		}
	}
	return out, nil
}

// everyDay does with kubectl what people and controllers do to workloads.
func (h *harness) everyDay() error {
	h.must("rollout", "restart", "deployment/web", "-n", "shop")
	h.waitRollout("deployment/web")
	// kubectl 1.37 has no --record: this is the annotation it used to write.
	h.must("annotate", "deployment/web", "-n", "shop", "kubernetes.io/change-cause=kubectl set image deployment/web app=registry.example/web:2")
	h.must("set", "image", "deployment/web", "-n", "shop", "app=registry.example/web:2")
	h.waitRollout("deployment/web")
	h.must("scale", "deployment/web", "-n", "shop", "--replicas=3")
	h.must("rollout", "undo", "deployment/web", "-n", "shop")
	h.waitRollout("deployment/web")
	h.must("rollout", "restart", "daemonset/agent", "-n", "shop")
	h.must("scale", "statefulset/db", "-n", "shop", "--replicas=2")
	h.must("create", "job", "manual", "--from=cronjob/tick", "-n", "shop")
	h.must("apply", "-f", h.manifests("limited"))
	h.must("apply", "--server-side", "-f", h.manifests("server-side"))
	if err := h.waitPods("shop", "app=api", 1); err != nil {
		h.fail("%v", err)
	}
	h.must("delete", "deployment/api", "-n", "shop", "--cascade=foreground", "--timeout=90s")
	h.must("apply", "-f", h.manifests("finalizer"))
	h.must("delete", "deployment/held", "-n", "shop", "--wait=false")
	h.must("patch", "deployment/held", "-n", "shop", "--type=json", `-p=[{"op":"remove","path":"/metadata/finalizers"}]`)
	// The objects that predate the policy: scaled, and deleted in the
	// foreground, by their controllers' updates.
	h.must("scale", "deployment/legacy", "-n", "shop", "--replicas=2")
	h.must("delete", "deployment/retired", "-n", "shop", "--cascade=foreground", "--timeout=90s")
	h.must("delete", "daemonset/retired-agent", "-n", "shop", "--cascade=foreground", "--timeout=90s")
	h.must("apply", "-f", h.manifests("apparmor"))
	if err := h.mirrorPod(); err != nil {
		return err
	}
	// An administrator's update of the kubelet's mirror Pod: it keeps the
	// kubelet's keys.
	h.must("label", "pod", "static-web-"+nodes[0], "-n", "shop", "example.com/checked=yes")
	return nil
}

func (h *harness) waitRollout(object string) {
	if _, err := h.kubectl("rollout", "status", object, "-n", "shop", "--timeout=5s"); err != nil {
		// No kubelet runs the Pods, so a rollout never completes; wait
		// instead until the new ReplicaSet exists.
		time.Sleep(2 * time.Second)
	}
}

// mirrorPod creates, as a node, the mirror Pod of a static Pod in a namespace
// the policy covers, bound to that node and owned by it, as NodeRestriction
// demands.
func (h *harness) mirrorPod() error {
	node, err := h.getJSON("get", "node", nodes[0])
	if err != nil {
		return err
	}
	uid := node["metadata"].(map[string]any)["uid"].(string)
	pod := map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata": map[string]any{
			"name":      "static-web-" + nodes[0],
			"namespace": "shop",
			"annotations": map[string]string{
				"example.com/owner":           "team-platform",
				"kubernetes.io/config.hash":   "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
				"kubernetes.io/config.mirror": "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
				"kubernetes.io/config.seen":   "2026-12-04T10:00:00.000000000Z",
				"kubernetes.io/config.source": "file",
			},
			"ownerReferences": []map[string]any{{
				"apiVersion": "v1", "kind": "Node", "name": nodes[0], "uid": uid, "controller": true,
			}},
		},
		"spec": map[string]any{
			"nodeName":   nodes[0],
			"containers": []map[string]any{{"name": "web", "image": "registry.example/static-web:1"}},
		},
	}
	text, _ := json.Marshal(pod)
	out, err := h.kubectlIn(string(text), "create", "-f", "-",
		"--as=system:node:"+nodes[0], "--as-group=system:nodes", "--as-group=system:authenticated")
	fmt.Printf("   kubectl create (as system:node:%s) the mirror Pod: %s", nodes[0], out)
	return err
}

// refusals: what the policy must refuse, the API server refuses with its
// message.
func (h *harness) refusals() error {
	for _, refusal := range []struct {
		what    string
		args    []string
		message string
	}{
		{"a Deployment without its owner (owner-required)",
			[]string{"apply", "-f", h.manifests("refused/no-owner.yaml")},
			`admission webhook "owner-required.annotations-policy.test" denied the request: Deployment "shop/nobody" lacks required annotations; add "example.com/owner"`},
		{"a user's Pod marked as a mirror Pod (allowlist)",
			[]string{"apply", "-f", h.manifests("refused/forged-mirror-pod.yaml")},
			`admission webhook "allowlist.annotations-policy.test" denied the request: Pod "shop/debug-shell" carries annotations outside the allowed list "example.com/*"; remove "kubernetes.io/config.mirror"`},
		{"a Deployment update that adds the rollback key (allowlist)",
			// The API server's apps/v1 conversion reads the value as a revision
			// number and refuses anything else before any webhook is called.
			[]string{"annotate", "deployment/web", "-n", "shop", "deprecated.deployment.rollback.to=1"},
			`remove "deprecated.deployment.rollback.to"`},
	} {
		out, err := h.kubectl(refusal.args...)
		fmt.Printf("   %s: %s", refusal.what, firstLine(out))
		if err == nil {
			h.fail("%s was accepted", refusal.what)
		} else if !strings.Contains(out, refusal.message) {
			h.fail("%s was refused, but not with %q: %s", refusal.what, refusal.message, out)
		}
	}
	return nil
}

// grouped runs workloads where the policy group alone judges: the
// controllers' requests pass it, and what breaks either member is refused
// with the group's message (the members' own go into the response's
// causes, which the recordings hold).
func (h *harness) grouped() error {
	h.must("apply", "-f", h.manifests("grouped"))
	for _, wait := range []struct {
		selector string
		count    int
	}{{"app=report", 1}, {"job-name=shards", 2}} {
		if err := h.waitPods(group.namespace, wait.selector, wait.count); err != nil {
			h.fail("%v", err)
		}
	}
	h.must("rollout", "restart", "deployment/report", "-n", group.namespace)
	if err := h.waitPodsAtLeast(group.namespace, "app=report", 1, 2); err != nil {
		h.fail("%v", err)
	}
	denied := `admission webhook "` + group.id + `.annotations-policy.test" denied the request: workloads must name their owner and carry no annotation outside example.com/`
	for _, file := range []string{"refused/grouped-no-owner.yaml", "refused/grouped-foreign-key.yaml"} {
		out, err := h.kubectl("apply", "-f", h.manifests(file))
		fmt.Printf("   %s: %s", file, firstLine(out))
		if err == nil {
			h.fail("%s was accepted under the group", file)
		} else if !strings.Contains(out, denied) {
			h.fail("%s was refused, but not with %q: %s", file, denied, out)
		}
	}
	return nil
}

func firstLine(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	return line + "\n"
}

// derivedObjects: after everything, each workload has what its controller
// must make.
func (h *harness) derivedObjects() error {
	waits := []struct {
		namespace, selector string
		least, most         int
	}{
		// Three replicas, and up to maxSurge (25 %, so 1) more while the
		// rollouts that never finish keep old Pods.
		{"shop", "app=web", 3, 4},
		{"shop", "app=agent", len(nodes), len(nodes)}, {"shop", "app=db", 2, 2},
		{"shop", "app=classic", 2, 2}, {"shop", "job-name=render", 2, 2}, {"shop", "job-name=manual", 1, 1},
		{"shop", "app=legacy", 2, 2}, {"limited", "app=sized", 1, 1}, {"shop", "app=confined", 1, 1},
	}
	for _, wait := range waits {
		if err := h.waitPodsAtLeast(wait.namespace, wait.selector, wait.least, wait.most); err != nil {
			h.fail("%v", err)
		}
	}
	for _, gone := range []string{"deployment/api", "deployment/held", "deployment/retired", "daemonset/retired-agent"} {
		if err := eventually(60*time.Second, func() error {
			if _, err := h.kubectl("get", gone, "-n", "shop"); err == nil {
				return fmt.Errorf("%s is still there", gone)
			}
			return nil
		}); err != nil {
			h.fail("%v", err)
		}
	}
	for _, claim := range []string{"data-db-0", "data-db-1"} {
		if _, err := h.kubectl("get", "pvc", claim, "-n", "shop"); err != nil {
			h.fail("%v", err)
		}
	}
	sized, err := h.getJSON("get", "pods", "-n", "limited", "-l", "app=sized")
	if err == nil && len(items(sized)) > 0 {
		annotations, _ := items(sized)[0]["metadata"].(map[string]any)["annotations"].(map[string]any)
		if _, ok := annotations["kubernetes.io/limit-ranger"]; !ok {
			h.fail("the LimitRange's Pod carries no kubernetes.io/limit-ranger: %v", annotations)
		}
	}
	return nil
}

// noFailedCreate: no controller was refused anything.
func (h *harness) noFailedCreate() error {
	events, err := h.getJSON("get", "events", "-A")
	if err != nil {
		return err
	}
	for _, event := range items(events) {
		reason, _ := event["reason"].(string)
		if reason == "FailedCreate" || reason == "ReplicaSetCreateError" || strings.HasPrefix(reason, "Failed") {
			h.fail("event %s on %v: %v", reason, event["involvedObject"], event["message"])
		}
	}
	return nil
}
