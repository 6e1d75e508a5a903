package main

// The load scenario (cluster/run --load), on a control plane of its own:
// what the policy costs the API server when a busy cluster sends it
// thousands of requests, measured beside a module that accepts every
// request unread (bench/noop, noop.wasm), listed once before the policy and
// once after it, all served by policy-runner serve and registered as three
// webhooks of the same configuration, so that the API server calls each for
// every request under the same load. The figures are the API server's own
// histogram per webhook (apiserver_admission_webhook_admission_duration_seconds),
// what each serve says of its own time, both read from /metrics before and
// after each phase (metrics.go), the client's timings, and the ratio of the
// policy's to each no-op's; and nothing may be lost: every Pod the
// Deployment asks for exists, every ConfigMap without the owner is refused
// with the policy's message and every other one exists.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	loadNamespace  = "load"
	loadReplicas   = 1000
	loadConfigMaps = 10000
	// Requests in flight from the client, for the ConfigMaps and the audit.
	loadInFlight = 32
	// What the policy says of an object without the owner
	// (recommended.json's owner-required).
	lacksOwnerMessage = `lacks required annotations; add "example.com/owner"`
)

// loadWebhook is one of the webhooks under load.
type loadWebhook struct {
	id       string // its path, /validate/<id> and /audit/<id>
	label    string // as the report names it
	module   string
	settings string
	base     string // its base URL
	noop     bool   // the no-op module, which accepts everything
}

// The webhook's name in the configuration, which the API server's metrics
// carry.
func (w loadWebhook) name() string { return w.id + ".load.test" }

// loadPhase is what one phase measured.
type loadPhase struct {
	name  string
	took  time.Duration
	calls map[string]histogram // webhook name → the API server's histogram
	// webhook name → calls the API server could not complete (a timeout, a
	// refused connection): error_type calling_webhook_error
	failedCalls map[string]float64
	// The client's timings: one series for the API requests, or one a
	// webhook for the audit, which goes to the webhooks directly.
	client map[string][]time.Duration
	// Requests the client saw accepted and refused (by the policy, with
	// its message); errors are neither.
	accepted, refused, errors int
	// webhook name → what its serve says of its own time
	serve map[string]serveMetrics
}

func (h *harness) loadScenarios() []scenario {
	return []scenario{
		{Name: "start the control plane", do: h.startControlPlane, fatal: true},
		{Name: "read the release", do: h.readRelease, fatal: true},
		{Name: "serve the policy between two no-op modules", do: h.registerLoadWebhooks, fatal: true},
		{Name: fmt.Sprintf("scale a Deployment to %d replicas", loadReplicas), do: h.loadPods},
		{Name: fmt.Sprintf("create %d ConfigMaps, %d at a time, half without the owner", loadConfigMaps, loadInFlight), do: h.loadConfigMapsPhase},
		{Name: "audit what the namespace holds, as the audit scanner does", do: h.loadAudit},
		{Name: "find no failed creation", do: h.noFailedCreate},
		{Name: "report the load", do: h.loadReport},
	}
}

// registerLoadWebhooks makes the namespace the load goes to (with what its
// controllers put in it first: the default service account and
// kube-root-ca.crt, a ConfigMap the policy would refuse), then serves the
// policy with the recommended owner-required settings and the no-op
// module, and registers both for the namespace's Pods and ConfigMaps.
func (h *harness) registerLoadWebhooks() error {
	if _, err := h.kubectl("create", "namespace", loadNamespace); err != nil {
		return err
	}
	if err := eventually(60*time.Second, func() error {
		if _, err := h.kubectl("get", "serviceaccount", "default", "-n", loadNamespace); err != nil {
			return err
		}
		_, err := h.kubectl("get", "configmap", "kube-root-ca.crt", "-n", loadNamespace)
		return err
	}); err != nil {
		return err
	}
	var settings string
	for _, p := range policies {
		if p.id == "owner-required" {
			settings = p.settings
		}
	}
	if settings == "" {
		return fmt.Errorf("recommended.json has no owner-required")
	}
	// The API server starts its calls to a request's webhooks in the order
	// of the configuration, a head start measurable under load: a no-op
	// goes before the policy and another after it, each served on its own
	// as the policy is, so that the order neither flatters the policy nor
	// weighs on it unseen.
	h.loadHooks = []loadWebhook{
		{id: "noop-first", label: "no-op module, first", module: h.noopModule, settings: "{}", noop: true},
		{id: "annotations", label: "the policy", module: h.module, settings: settings},
		{id: "noop-last", label: "no-op module, last", module: h.noopModule, settings: "{}", noop: true},
	}
	// One pool of connections for the audit's calls and the scrapes of
	// serve's /metrics, so that a scrape makes no connection of its own
	// in a phase it measures (serve counts its connections).
	transport := h.trustingTransport()
	transport.MaxIdleConnsPerHost = loadInFlight
	h.webhookClient = &http.Client{Timeout: 30 * time.Second, Transport: transport}
	cert, key, err := h.ca.serving(h.work, "webhook", "127.0.0.1")
	if err != nil {
		return err
	}
	var webhooks []map[string]any
	for i := range h.loadHooks {
		w := &h.loadHooks[i]
		if w.base, err = h.serveWebhook(w.id, w.module, cert, key, "--settings-json", w.settings); err != nil {
			return err
		}
		webhooks = append(webhooks, map[string]any{
			"name": w.name(),
			"clientConfig": map[string]any{
				"url":      w.base + "/validate/" + w.id,
				"caBundle": h.ca.pem,
			},
			"rules": []map[string]any{{
				"apiGroups": []string{""}, "apiVersions": []string{"v1"},
				"resources": []string{"pods", "configmaps"}, "operations": []string{"CREATE", "UPDATE"},
				"scope": "Namespaced",
			}},
			"failurePolicy":           "Fail",
			"sideEffects":             "None",
			"matchPolicy":             "Equivalent",
			"admissionReviewVersions": []string{"v1"},
			"timeoutSeconds":          10,
			"namespaceSelector": map[string]any{"matchLabels": map[string]string{
				"kubernetes.io/metadata.name": loadNamespace}},
		})
	}
	configuration, _ := json.Marshal(map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       "ValidatingWebhookConfiguration",
		"metadata":   map[string]any{"name": "load"},
		"webhooks":   webhooks,
	})
	if _, err := h.kubectlIn(string(configuration), "create", "-f", "-"); err != nil {
		return err
	}
	// Called once a ConfigMap without the owner is refused by the policy.
	return eventually(30*time.Second, func() error {
		out, err := h.kubectl("create", "configmap", "probe", "-n", loadNamespace, "--dry-run=server")
		if err == nil || !strings.Contains(out, lacksOwnerMessage) {
			return fmt.Errorf("the webhooks are not called yet: %s", strings.TrimSpace(out))
		}
		return nil
	})
}

// loadPods scales a Deployment to loadReplicas at once: the replicaset
// controller creates its Pods as fast as its client may, each through both
// webhooks. Every Pod asked for must exist.
func (h *harness) loadPods() error {
	before, err := h.scrapeWebhooks()
	if err != nil {
		return err
	}
	deployment := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment",
"metadata":{"name":"crowd","namespace":%q,"annotations":{"example.com/owner":"load"}},
"spec":{"replicas":%d,"selector":{"matchLabels":{"app":"crowd"}},
"template":{"metadata":{"labels":{"app":"crowd"},"annotations":{"example.com/owner":"load"}},
"spec":{"containers":[{"name":"pause","image":"registry.k8s.io/pause:3.10"}]}}}}`,
		loadNamespace, loadReplicas)
	started := time.Now()
	if _, err := h.kubectlIn(deployment, "create", "-f", "-"); err != nil {
		return err
	}
	count := 0
	err = eventually(15*time.Minute, func() error {
		count, err = h.countObjects("pods")
		if err != nil {
			return err
		}
		if count < loadReplicas {
			return fmt.Errorf("%d of %d Pods", count, loadReplicas)
		}
		return nil
	})
	took := time.Since(started)
	if err != nil {
		return err
	}
	if count != loadReplicas {
		h.fail("%d Pods where the Deployment asks for %d", count, loadReplicas)
	}
	after, err := h.scrapeWebhooks()
	if err != nil {
		return err
	}
	phase := after.since(before)
	phase.name = fmt.Sprintf("%d Pods (replicaset controller)", loadReplicas)
	phase.took = took
	phase.accepted = count
	h.loadPhases = append(h.loadPhases, phase)
	fmt.Printf("   %d Pods in %.1f s\n", count, took.Seconds())
	return nil
}

// countObjects counts a resource's objects in the load namespace, one item
// read: the list's remainingItemCount says the rest (the API server gives
// it only to a list without a selector).
func (h *harness) countObjects(resource string) (int, error) {
	path := fmt.Sprintf("/api/v1/namespaces/%s/%s?limit=1", loadNamespace, resource)
	text, err := h.kubectl("get", "--raw", path)
	if err != nil {
		return 0, err
	}
	var list struct {
		Metadata struct {
			Remaining *int `json:"remainingItemCount"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal([]byte(text), &list); err != nil {
		return 0, err
	}
	count := len(list.Items)
	if list.Metadata.Remaining != nil {
		count += *list.Metadata.Remaining
	}
	return count, nil
}

// apiClient talks to the API server as the administrator, over HTTP/2 as
// kubectl does.
func (h *harness) apiClient() *http.Client {
	transport := h.trustingTransport()
	transport.ForceAttemptHTTP2 = true
	transport.MaxIdleConnsPerHost = loadInFlight
	return &http.Client{Timeout: 60 * time.Second, Transport: transport}
}

// inParallel calls do(i) for each i below n, width calls at a time, and
// returns how long each took.
func inParallel(n, width int, do func(i int)) []time.Duration {
	took := make([]time.Duration, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range width {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				started := time.Now()
				do(i)
				took[i] = time.Since(started)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return took
}

// loadConfigMapsPhase creates loadConfigMaps ConfigMaps, loadInFlight at a
// time; the odd ones lack the owner and must be refused with the policy's
// message, the even ones must be accepted and exist afterwards.
func (h *harness) loadConfigMapsPhase() error {
	before, err := h.scrapeWebhooks()
	if err != nil {
		return err
	}
	client := h.apiClient()
	url := h.server + "/api/v1/namespaces/" + loadNamespace + "/configmaps"
	type outcome struct {
		code    int
		message string
	}
	outcomes := make([]outcome, loadConfigMaps)
	started := time.Now()
	took := inParallel(loadConfigMaps, loadInFlight, func(i int) {
		annotations := map[string]string{"example.com/team": "load"}
		if i%2 == 0 {
			annotations["example.com/owner"] = "load"
		}
		body, _ := json.Marshal(map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%05d", i), "annotations": annotations},
			"data":     map[string]string{"index": strconv.Itoa(i)},
		})
		request, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		request.Header.Set("Authorization", "Bearer "+adminToken)
		request.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(request)
		if err != nil {
			outcomes[i] = outcome{message: err.Error()}
			return
		}
		defer resp.Body.Close()
		text, _ := io.ReadAll(resp.Body)
		var status struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(text, &status)
		outcomes[i] = outcome{code: resp.StatusCode, message: status.Message}
	})
	elapsed := time.Since(started)
	after, err := h.scrapeWebhooks()
	if err != nil {
		return err
	}
	phase := after.since(before)
	phase.name = fmt.Sprintf("%d ConfigMaps (%d clients)", loadConfigMaps, loadInFlight)
	phase.took = elapsed
	phase.client = map[string][]time.Duration{"": took}
	wrong := 0
	for i, o := range outcomes {
		owned := i%2 == 0
		switch {
		case o.code == http.StatusCreated:
			phase.accepted++
		case o.code >= 400 && strings.Contains(o.message, "denied the request") &&
			strings.Contains(o.message, lacksOwnerMessage):
			phase.refused++
		default:
			phase.errors++
		}
		if owned != (o.code == http.StatusCreated) {
			wrong++
			if wrong <= 5 {
				h.fail("cm-%05d (owner: %v): %d %s", i, owned, o.code, o.message)
			}
		}
	}
	if wrong > 5 {
		h.fail("%d ConfigMaps in all judged otherwise than their owner says", wrong)
	}
	// Every accepted ConfigMap exists, and no refused one.
	text, err := h.kubectl("get", "configmaps", "-n", loadNamespace, "-o", "name")
	if err != nil {
		return err
	}
	exists := map[string]bool{}
	for _, line := range strings.Fields(text) {
		exists[strings.TrimPrefix(line, "configmap/")] = true
	}
	for i := range loadConfigMaps {
		name := fmt.Sprintf("cm-%05d", i)
		if exists[name] != (i%2 == 0) {
			h.fail("%s: exists %v, owner %v", name, exists[name], i%2 == 0)
		}
	}
	h.loadPhases = append(h.loadPhases, phase)
	fmt.Printf("   %d accepted, %d refused, %d errors in %.1f s\n",
		phase.accepted, phase.refused, phase.errors, elapsed.Seconds())
	return nil
}

// loadAudit sends each Pod and ConfigMap of the load namespace to each
// webhook's /audit/<id> as the audit scanner does (audit.go), loadInFlight
// at a time: the policy must pass all but kube-root-ca.crt, which its
// controller made before the policy and which lacks the owner; the no-op
// passes everything.
func (h *harness) loadAudit() error {
	var reviews [][]byte
	var names []string
	for _, resource := range []string{"pods", "configmaps"} {
		text, err := h.kubectl("get", "--raw", "/api/v1/namespaces/"+loadNamespace+"/"+resource)
		if err != nil {
			return err
		}
		var list map[string]any
		if err := json.Unmarshal([]byte(text), &list); err != nil {
			return err
		}
		kind := strings.TrimSuffix(list["kind"].(string), "List")
		for _, object := range items(list) {
			object["apiVersion"], object["kind"] = "v1", kind
			body, _ := json.Marshal(scannerReview(object))
			reviews = append(reviews, body)
			names = append(names, kind+" "+object["metadata"].(map[string]any)["name"].(string))
		}
	}
	want := loadReplicas + loadConfigMaps/2 + 1
	if len(reviews) != want {
		h.fail("the audit found %d objects where %d were made", len(reviews), want)
	}
	client := h.webhookClient
	before, err := h.scrapeWebhooks()
	if err != nil {
		return err
	}
	var phase loadPhase
	phase.client = map[string][]time.Duration{}
	started := time.Now()
	for _, w := range h.loadHooks {
		verdicts := make([]verdict, len(reviews))
		failed := make([]error, len(reviews))
		took := inParallel(len(reviews), loadInFlight, func(i int) {
			resp, err := client.Post(w.base+"/audit/"+w.id, "application/json", bytes.NewReader(reviews[i]))
			if err != nil {
				failed[i] = err
				return
			}
			defer resp.Body.Close()
			text, _ := io.ReadAll(resp.Body)
			verdicts[i], failed[i] = readAnswer(text)
		})
		phase.client[w.name()] = took
		for i, v := range verdicts {
			expected := w.noop || names[i] != "ConfigMap kube-root-ca.crt"
			switch {
			case failed[i] != nil:
				phase.errors++
				h.fail("audit of %s by %s: %v", names[i], w.label, failed[i])
			case v.Allowed != expected:
				h.fail("audit of %s by %s: allowed %v: %s", names[i], w.label, v.Allowed, v.Message)
			case v.Allowed:
				phase.accepted++
			case strings.Contains(v.Message, lacksOwnerMessage):
				phase.refused++
			default:
				h.fail("audit of %s by %s: %s", names[i], w.label, v.Message)
			}
		}
	}
	phase.took = time.Since(started)
	after, err := h.scrapeWebhooks()
	if err != nil {
		return err
	}
	phase.serve = after.since(before).serve
	phase.name = fmt.Sprintf("audit of %d objects (%d at a time)", len(reviews), loadInFlight)
	h.loadPhases = append(h.loadPhases, phase)
	return nil
}

// nearestRank is the q-quantile of took (nearest rank), and its maximum.
func nearestRank(took []time.Duration, q float64) time.Duration {
	sorted := append([]time.Duration(nil), took...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

func ms(seconds float64) string { return fmt.Sprintf("%.1f ms", seconds*1000) }

// loadReport prints each phase: the API server's figures per webhook, the
// client's, and the ratio of the policy's to the no-op's.
func (h *harness) loadReport() error {
	fmt.Println("   phase | took | webhook | calls | p50 | p99 | max | ≤ 5 ms | ≤ 25 ms | failed calls")
	for _, phase := range h.loadPhases {
		p99 := map[string]float64{}
		for _, w := range h.loadHooks {
			calls := phase.calls[w.name()]
			if calls == nil || calls.count() == 0 {
				continue
			}
			p99[w.id] = calls.quantile(0.99)
			fmt.Printf("   %s | %.1f s | %s | %.0f | %s | %s | ≤ %s | %.1f %% | %.1f %% | %.0f\n", phase.name,
				phase.took.Seconds(), w.label, calls.count(), ms(calls.quantile(0.5)),
				ms(p99[w.id]), ms(calls.ceiling()), 100*calls.within(0.005), 100*calls.within(0.025),
				phase.failedCalls[w.name()])
		}
		// The API requests' timings, or each webhook's, in the webhooks'
		// order.
		series := []string{""}
		labels := map[string]string{"": "the client, whole requests"}
		for _, w := range h.loadHooks {
			series = append(series, w.name())
			labels[w.name()] = w.label + ", by the client"
		}
		for _, who := range series {
			took, ok := phase.client[who]
			if !ok {
				continue
			}
			label := labels[who]
			fmt.Printf("   %s | %.1f s | %s | %d | %s | %s | %s | | | %d\n", phase.name,
				phase.took.Seconds(), label, len(took),
				ms(nearestRank(took, 0.5).Seconds()), ms(nearestRank(took, 0.99).Seconds()),
				ms(nearestRank(took, 1).Seconds()), phase.errors)
		}
		if p99["noop-first"] > 0 && p99["noop-last"] > 0 {
			fmt.Printf("   %s: the policy's p99 is %.2f times the first no-op's, %.2f times the last one's\n",
				phase.name, p99["annotations"]/p99["noop-first"], p99["annotations"]/p99["noop-last"])
		}
		fmt.Printf("   %s: %d accepted, %d refused with the policy's message, %d errors\n",
			phase.name, phase.accepted, phase.refused, phase.errors)
		for _, w := range h.loadHooks {
			if failed := phase.failedCalls[w.name()]; failed > 0 {
				h.fail("%s: %.0f calls to %s failed (a timeout or an error)", phase.name, failed, w.label)
			}
		}
	}
	h.serveReport()
	return nil
}

// serveReport prints what each webhook's serve says of its own time, a
// phase at a time: what the API server's figures hold beyond it is the
// network, HTTP and the scheduling between the two.
func (h *harness) serveReport() {
	fmt.Println("   inside serve: phase | webhook | connections | handshake p99 | instances made | " +
		"queued p50, p99 | module p50, p99 | review p50, p99 | review ≤ 5 ms, ≤ 25 ms")
	fine := func(seconds float64) string { return fmt.Sprintf("%.3f ms", seconds*1000) }
	for _, phase := range h.loadPhases {
		for _, w := range h.loadHooks {
			serve, ok := phase.serve[w.name()]
			if !ok {
				continue
			}
			stage := func(name string) histogram {
				if buckets := serve.stages[name]; buckets != nil {
					return buckets
				}
				return histogram{math.Inf(1): 0}
			}
			handshake, queued, module, review := stage("handshake"), stage("review_queued"), stage("review_module"), stage("review")
			handshakeP99 := "none"
			if handshake.count() > 0 {
				handshakeP99 = fine(handshake.quantile(0.99))
			}
			fmt.Printf("   inside serve: %s | %s | %.0f | %s | %.0f | %s, %s | %s, %s | %s, %s | %.1f %%, %.1f %%\n",
				phase.name, w.label, handshake.count(), handshakeP99, serve.instances,
				fine(queued.quantile(0.5)), fine(queued.quantile(0.99)),
				fine(module.quantile(0.5)), fine(module.quantile(0.99)),
				fine(review.quantile(0.5)), fine(review.quantile(0.99)),
				100*review.within(0.005), 100*review.within(0.025))
		}
	}
}
