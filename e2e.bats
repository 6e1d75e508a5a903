#!/usr/bin/env bats
# End-to-end tests of policy.wasm with `kwctl run`, or with the project's own
# runner (same arguments, same output) where kwctl is not installed.

bats_require_minimum_version 1.5.0

setup_file() {
  cd "$BATS_TEST_DIRNAME"
  if command -v kwctl >/dev/null 2>&1; then
    export RUNNER="kwctl run"
  else
    export RUNNER="$BATS_TEST_DIRNAME/target/debug/policy-runner run"
  fi
  export POLICY="${POLICY:-policy.wasm}"
}

setup() {
  cd "$BATS_TEST_DIRNAME"
}

policy() {
  local request="$1"
  shift
  run --separate-stderr $RUNNER "$POLICY" -r "test_data/$request" "$@"
}

accepted() {
  [ "$status" -eq 0 ]
  [[ "$output" == *'"allowed":true'* ]]
}

rejected_with() {
  [ "$status" -eq 0 ]
  [[ "$output" == *'"allowed":false'* ]]
  [[ "$output" == *"$1"* ]]
}

@test "containsAnyOf: accepts an Ingress with one of the values" {
  policy ingress.json --settings-json '{"criteria":"containsAnyOf","values":["owner","example.com/owner"]}'
  accepted
  [[ "$output" == *'"uid":"1299d386-525b-4032-98ae-1949f69f9cfc"'* ]]
}

@test "containsAnyOf: rejects a Deployment with none of the values" {
  policy deployment.json --settings-json '{"criteria":"containsAnyOf","values":["cost-center","team"]}'
  rejected_with 'Deployment \"default/nginx\" must carry at least one of the annotations \"cost-center\", \"team\", and carries none of them'
}

@test "doesNotContainAnyOf: accepts an Ingress without the forbidden annotations" {
  policy ingress.json --settings-json '{"criteria":"doesNotContainAnyOf","values":["example.com/debug"]}'
  accepted
}

@test "doesNotContainAnyOf: rejects and names the forbidden annotations found" {
  policy ingress.json --settings-json '{"criteria":"doesNotContainAnyOf","values":["owner","cost-center","other"]}'
  rejected_with 'Ingress \"shop/shop-frontend\" carries forbidden annotations; remove \"cost-center\", \"owner\"'
}

@test "containsAllOf: accepts a Deployment with every value" {
  policy deployment.json --settings-json '{"criteria":"containsAllOf","values":["owner","example.com/application"]}'
  accepted
}

@test "containsAllOf: rejects and names the missing annotations" {
  policy ingress.json --settings-json '{"criteria":"containsAllOf","values":["owner","example.com/team","cost-center","a.example.com/b"]}'
  rejected_with 'Ingress \"shop/shop-frontend\" lacks required annotations; add \"a.example.com/b\", \"example.com/team\"'
}

@test "doesNotContainAllOf: accepts when the values are not all present" {
  policy ingress.json --settings-json '{"criteria":"doesNotContainAllOf","values":["owner","example.com/debug"]}'
  accepted
}

@test "doesNotContainAllOf: rejects when all the values are present together" {
  policy ingress.json --settings-json '{"criteria":"doesNotContainAllOf","values":["owner","cost-center"]}'
  rejected_with 'carries all of the annotations \"cost-center\", \"owner\", which must not appear together'
}

@test "containsOtherThan: accepts when some other annotation is present" {
  policy deployment.json --settings-json '{"criteria":"containsOtherThan","values":["owner"]}'
  accepted
}

@test "containsOtherThan: rejects when only the listed annotations are present" {
  policy deployment.json --settings-json '{"criteria":"containsOtherThan","values":["owner","example.com/application","x"]}'
  rejected_with 'carries only the annotations \"example.com/application\", \"owner\"; it needs at least one annotation other than'
}

@test "doesNotContainOtherThan: accepts annotations within the allowlist" {
  policy deployment.json --settings-json '{"criteria":"doesNotContainOtherThan","values":["owner","example.com/application","cost-center"]}'
  accepted
}

@test "doesNotContainOtherThan: rejects and names the annotations outside the allowlist" {
  policy ingress.json --settings-json '{"criteria":"doesNotContainOtherThan","values":["owner"]}'
  rejected_with 'outside the allowed list \"owner\"; remove \"cost-center\", \"nginx.ingress.kubernetes.io/rewrite-target\"'
}

@test "a Pod with no annotations fails containsAnyOf and passes an allowlist" {
  policy pod-no-annotations.json --settings-json '{"criteria":"containsAnyOf","values":["owner"]}'
  rejected_with 'Pod \"default/busybox\" must carry at least one of the annotations \"owner\"'
  policy pod-no-annotations.json --settings-json '{"criteria":"doesNotContainOtherThan","values":["owner"]}'
  accepted
}

@test "a DELETE is accepted, whatever the old object carried" {
  policy delete.json --settings-json '{"criteria":"doesNotContainAnyOf","values":["forbidden.example.com/debug"]}'
  accepted
  [[ "$output" == *'"uid":"6b7e1c2d-3f4a-4b5c-8d9e-0f1a2b3c4d5e"'* ]]
}

@test "a custom resource nested 100 levels deep is evaluated" {
  policy custom-resource.json --settings-json '{"criteria":"containsAllOf","values":["owner","example.com/application"]}'
  accepted
  policy custom-resource.json --settings-json '{"criteria":"containsAllOf","values":["owner","cost-center"]}'
  rejected_with 'Widget \"default/deep-widget\" lacks required annotations; add \"cost-center\"'
}

@test "settings from a YAML file, PascalCase criterion" {
  printf 'criteria: ContainsAllOf\nvalues:\n  - owner\n' > "$BATS_TEST_TMPDIR/settings.yaml"
  policy ingress.json --settings-path "$BATS_TEST_TMPDIR/settings.yaml"
  accepted
}

@test "invalid settings: an empty list" {
  policy ingress.json --settings-json '{"criteria":"containsAnyOf","values":[]}'
  [ "$status" -eq 1 ]
  [ -z "$output" ]
  [[ "$stderr" == *'Provided settings are not valid: invalid settings: `values` is empty'* ]]
}

@test "invalid settings: an unknown criterion" {
  policy ingress.json --settings-json '{"criteria":"containsSomeOf","values":["owner"]}'
  [ "$status" -eq 1 ]
  [[ "$stderr" == *'Provided settings are not valid: invalid settings: unknown criteria "containsSomeOf"; use one of: containsAnyOf, doesNotContainAnyOf'* ]]
}

@test "invalid settings: an invalid annotation name" {
  policy ingress.json --settings-json '{"criteria":"containsAnyOf","values":["owner","bad name/x"]}'
  [ "$status" -eq 1 ]
  [[ "$stderr" == *'Provided settings are not valid: invalid settings: `values` holds invalid annotation names: "bad name/x": the prefix must be a DNS subdomain'* ]]
}

@test "invalid settings: a typo in a field name" {
  policy ingress.json --settings-json '{"criteria":"containsAnyOf","valuess":["owner"]}'
  [ "$status" -eq 1 ]
  [[ "$stderr" == *'unknown field `valuess`, expected `criteria`, `values`, `allowExistingViolations` or `allowKubernetesBookkeeping`'* ]]
}

@test "invalid settings: allowKubernetesBookkeeping that is not a boolean" {
  policy ingress.json --settings-json '{"criteria":"doesNotContainOtherThan","values":["owner"],"allowKubernetesBookkeeping":"no"}'
  [ "$status" -eq 1 ]
  [[ "$stderr" == *'expected `allowKubernetesBookkeeping` to be true or false, found a string'* ]]
}

# The example group starts in monitor mode, in which kwctl run accepts
# whatever the members say: judge in protect mode here.
group_manifest() {
  sed -e "s|module: .*|module: file://$BATS_TEST_DIRNAME/$POLICY|" -e "s|mode: monitor|mode: protect|" \
    examples/policy-group.yaml > "$BATS_TEST_TMPDIR/group.yaml"
}

@test "policy group with kwctl: required() && not_denied()" {
  if ! command -v kwctl >/dev/null 2>&1; then
    skip "kwctl is not installed: the group's expression needs kwctl; its members are checked by the next test"
  fi
  group_manifest
  run --separate-stderr kwctl run "$BATS_TEST_TMPDIR/group.yaml" -r test_data/deployment.json
  accepted
  run --separate-stderr kwctl run "$BATS_TEST_TMPDIR/group.yaml" -r test_data/deployment-debug.json
  rejected_with 'the object must name an owner and carry no debugging annotation'
}

@test "policy group members, one by one through the module" {
  if [ ! -x "$BATS_TEST_DIRNAME/target/debug/policy-runner" ]; then
    skip "the project's runner is not built (cargo test builds it); kwctl runs the group above"
  fi
  run --separate-stderr "$BATS_TEST_DIRNAME/target/debug/policy-runner" manifest "$POLICY" examples/policy-group.yaml -r test_data/deployment-debug.json
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == "not_denied: "*'"allowed":false'*'remove \"example.com/debug\"'* ]]
  [[ "${lines[1]}" == "required: "*'"allowed":true'* ]]
  run --separate-stderr "$BATS_TEST_DIRNAME/target/debug/policy-runner" manifest "$POLICY" examples/policy-group.yaml -r test_data/deployment.json
  [[ "${lines[0]}" == "not_denied: "*'"allowed":true'* ]]
  [[ "${lines[1]}" == "required: "*'"allowed":true'* ]]
}

# The README's recommended settings for workloads, from the list the cluster
# tests register (cluster/harness/recommended.json): an owner required (in
# every namespace but kube-system), an allowlist of the user's own prefix
# (with Helm's two keys for a Helm release), a denylist.
recommended() {
  jq -ce --arg id "$1" '.[] | select(.id == $id) | .settings' \
    "$BATS_TEST_DIRNAME/cluster/harness/recommended.json"
}
OWNER_REQUIRED=$(recommended owner-required)
ALLOWLIST=$(recommended allowlist)

# What real API servers sent the policy (test_data/cluster/recorded/, written
# by cluster/run) and the requests written by hand for what no cluster test
# can send (test_data/cluster/written/), replayed: each verdict as its
# index.json gives it, under each of the index's settings.
@test "test_data/cluster/: every verdict as its index gives it" {
  local count=0 written=0
  for dir in test_data/cluster/recorded/*/ test_data/cluster/written/; do
    for review in "$dir"*.json; do
      local file
      file=$(basename "$review")
      [ "$file" = index.json ] && continue
      for id in $(jq -r '.settings | keys[]' "$dir/index.json"); do
        local settings allowed
        settings=$(jq -c --arg id "$id" '.settings[$id]' "$dir/index.json")
        allowed=$(jq -r --arg f "$file" --arg id "$id" '.verdicts[$f][$id].allowed' "$dir/index.json")
        policy "${review#test_data/}" --settings-json "$settings"
        if [ "$status" -ne 0 ] || [[ "$output" != *"\"allowed\":$allowed"* ]]; then
          echo "$review under $id: index says allowed=$allowed, got: $output $stderr"
          return 1
        fi
        count=$((count + 1))
        [[ "$dir" == *written/ ]] && written=$((written + 1))
      done
    done
  done
  [ "$count" -ge 200 ]
  [ "$written" -ge 16 ]
}

R=cluster/recorded/1.37

# The first recording of 1.37 whose request the jq filter selects, as
# `policy` takes it.
recorded_where() {
  local review
  for review in test_data/$R/*.json; do
    if [ "$(jq "(.request // {}) | $1" "$review")" = true ]; then
      echo "${review#test_data/}"
      return
    fi
  done
  echo "no recording where $1" >&2
  return 1
}

JUDGED=$(jq -c '.allowKubernetesBookkeeping = false' <<<"$ALLOWLIST")

@test "allowKubernetesBookkeeping: false rejects the deployment controller's ReplicaSet, naming its keys" {
  policy $R/replicaset-create-deployment-controller.json --settings-json "$JUDGED"
  rejected_with 'carries annotations outside the allowed list \"example.com/*\"; remove \"deployment.kubernetes.io/desired-replicas\", \"deployment.kubernetes.io/max-replicas\", \"deployment.kubernetes.io/revision\"'
}

@test "an allowlist of the user's prefix admits a DaemonSet and a mirror Pod, unless Kubernetes' keys are judged" {
  policy $R/daemonset-create-kubernetes-admin.json --settings-json "$ALLOWLIST"
  accepted
  policy cluster/written/22-pod-create-kubelet-mirror-pod.json --settings-json "$ALLOWLIST"
  accepted
  policy $R/daemonset-create-kubernetes-admin.json --settings-json "$JUDGED"
  rejected_with 'DaemonSet \"shop/agent\" carries annotations outside the allowed list \"example.com/*\"; remove \"deprecated.daemonset.template.generation\", \"kubectl.kubernetes.io/last-applied-configuration\"'
}

@test "an allowlist of the user's prefix refuses a user's mirror Pod and a forced rollback, naming the key" {
  policy $R/pod-create-kubernetes-admin.json --settings-json "$ALLOWLIST"
  rejected_with 'Pod \"shop/debug-shell\" carries annotations outside the allowed list \"example.com/*\"; remove \"kubernetes.io/config.mirror\"'
  local rollback
  rollback=$(recorded_where '.object.metadata.annotations["deprecated.deployment.rollback.to"] != null')
  policy "$rollback" --settings-json "$ALLOWLIST"
  rejected_with 'Deployment \"shop/web\" carries annotations outside the allowed list \"example.com/*\"; remove \"deprecated.deployment.rollback.to\"'
}

@test "the kubelet's keys count from a node and on an update of a Pod that had them" {
  policy $R/pod-create-node.json --settings-json "$ALLOWLIST"
  accepted
  policy $R/pod-update-kubernetes-admin.json --settings-json "$ALLOWLIST"
  accepted
  policy $R/pod-update-kubernetes-admin.json --settings-json "$(jq -c '.allowExistingViolations = false' <<<"$ALLOWLIST")"
  accepted
  policy $R/pod-create-node.json --settings-json "$JUDGED"
  rejected_with 'remove \"kubernetes.io/config.hash\", \"kubernetes.io/config.mirror\", \"kubernetes.io/config.seen\", \"kubernetes.io/config.source\"'
}

@test "an AppArmor key that restates the Pod's field counts as Kubernetes' own" {
  local pod
  pod=$(grep -l '"container.apparmor.security.beta.kubernetes.io/frontend"' test_data/cluster/recorded/1.33/pod-create-*.json | head -1)
  policy "${pod#test_data/}" --settings-json "$ALLOWLIST"
  accepted
  policy "${pod#test_data/}" --settings-json "$JUDGED"
  rejected_with 'remove \"container.apparmor.security.beta.kubernetes.io/frontend\"'
}

# The review Kubewarden's audit scanner sends for a stored object: a CREATE
# with no sender and no old object, the Kind as its resource
# (host/src/admission/audit.rs builds the same, and cites the scanner's source).
audit_review() {
  jq '.request.object as $o | ($o.apiVersion | split("/")) as $v
    | (if ($v | length) == 2 then {group: $v[0], version: $v[1]} else {group: "", version: $v[0]} end) as $gv
    | {apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: {
        uid: $o.metadata.uid, kind: ($gv + {kind: $o.kind}), requestKind: ($gv + {kind: $o.kind}),
        resource: ($gv + {resource: $o.kind}), name: $o.metadata.name, namespace: $o.metadata.namespace,
        operation: "CREATE", userInfo: {}, object: ($o | '"$2"'), oldObject: null}}' "test_data/$1"
}

@test "an audit passes the kubelet's mirror Pod and an Indexed Job's Pod, and fails their forgeries" {
  local mirror job
  mirror=$(recorded_where '.userInfo.username | startswith("system:node:")')
  job=$(recorded_where '.object.metadata.annotations["batch.kubernetes.io/job-completion-index"] != null')
  audit_review "$mirror" . > "$BATS_TEST_TMPDIR/mirror.json"
  audit_review "$job" . > "$BATS_TEST_TMPDIR/job.json"
  audit_review "$mirror" '.spec.nodeName = "node-2"' > "$BATS_TEST_TMPDIR/forged-mirror.json"
  audit_review "$job" '.metadata.ownerReferences[0].apiVersion = "example.com/v1"' > "$BATS_TEST_TMPDIR/forged-job.json"
  for review in mirror job; do
    run --separate-stderr $RUNNER "$POLICY" -r "$BATS_TEST_TMPDIR/$review.json" --settings-json "$ALLOWLIST"
    accepted
  done
  run --separate-stderr $RUNNER "$POLICY" -r "$BATS_TEST_TMPDIR/forged-mirror.json" --settings-json "$ALLOWLIST"
  rejected_with 'remove \"kubernetes.io/config.hash\", \"kubernetes.io/config.mirror\"'
  run --separate-stderr $RUNNER "$POLICY" -r "$BATS_TEST_TMPDIR/forged-job.json" --settings-json "$ALLOWLIST"
  rejected_with 'remove \"batch.kubernetes.io/job-completion-index\"'
}

@test "an explicit denylist still forbids one of Kubernetes' keys" {
  local annotated
  annotated=$(recorded_where '.kind.kind == "Deployment" and .object.metadata.annotations["kubernetes.io/change-cause"] != null and .oldObject.metadata.annotations["kubernetes.io/change-cause"] == null')
  policy "$annotated" --settings-json '{"criteria":"doesNotContainAnyOf","values":["kubernetes.io/change-cause"]}'
  rejected_with 'Deployment \"shop/web\" carries forbidden annotations; remove \"kubernetes.io/change-cause\"'
}

@test "allowExistingViolations: false rejects the controller's update of a ReplicaSet that predates the policy" {
  local legacy
  legacy=$(recorded_where '.kind.kind == "ReplicaSet" and .operation == "UPDATE" and .object.metadata.annotations["example.com/owner"] == null')
  policy "$legacy" --settings-json "$OWNER_REQUIRED"
  accepted
  policy "$legacy" --settings-json "$(jq -c '.allowExistingViolations = false' <<<"$OWNER_REQUIRED")"
  rejected_with 'lacks required annotations; add \"example.com/owner\"'
}

@test "invalid settings: a pattern that can match no key" {
  policy ingress.json --settings-json '{"criteria":"doesNotContainOtherThan","values":["example.com/*-"]}'
  [ "$status" -eq 1 ]
  [[ "$stderr" == *'"example.com/*-": the name part must start and end with a letter or a digit'* ]]
}

runner_check() {
  if [ ! -x "$BATS_TEST_DIRNAME/target/debug/policy-runner" ]; then
    skip "the project's runner is not built (cargo test builds it)"
  fi
  run --separate-stderr "$BATS_TEST_DIRNAME/target/debug/policy-runner" check "$POLICY" "$@"
}

@test "check: the examples, with the Pod the Deployment's ReplicaSet would make rejected" {
  runner_check --policy examples/cluster-admission-policy.yaml examples/
  [ "$status" -eq 1 ]
  [[ "$output" == *'examples/manifests/web.yaml'*'Pod shop/web-'*'rejected  lacks required annotations; add "example.com/owner"'*'from Deployment shop/web → ReplicaSet'* ]]
  [[ "${lines[-1]}" == "6 objects checked, 1 rejected, 5 left out by the policy's rules or selectors" ]]
}

@test "check: the compiled module is kept, and a second run reads it and prints the same" {
  cache="$BATS_TEST_TMPDIR/cache"
  runner_check --cache-dir "$cache" --policy examples/cluster-admission-policy.yaml examples/
  [ "$status" -eq 1 ]
  first=$output
  # wasmtime's cache: a directory a wasmtime version, a file a module.
  [ "$(find "$cache" -path '*/modules/wasmtime-*' -type f ! -name '*.stats' | wc -l)" -eq 1 ]
  POLICY_RUNNER_CACHE_DIR="$cache" runner_check --policy examples/cluster-admission-policy.yaml examples/
  [ "$status" -eq 1 ]
  [ "$output" = "$first" ]
  POLICY_RUNNER_CACHE_DIR="$BATS_TEST_TMPDIR/none" runner_check --no-cache --policy examples/cluster-admission-policy.yaml examples/
  [ "$output" = "$first" ]
  [ ! -e "$BATS_TEST_TMPDIR/none" ]
  # By default, in the user's cache directory.
  XDG_CACHE_HOME="$BATS_TEST_TMPDIR/home-cache" runner_check --policy examples/cluster-admission-policy.yaml examples/
  [ "$output" = "$first" ]
  [ -d "$BATS_TEST_TMPDIR/home-cache/policy-runner/modules" ]
  printf 'a file' > "$BATS_TEST_TMPDIR/file"
  runner_check --cache-dir "$BATS_TEST_TMPDIR/file/cache" --policy examples/cluster-admission-policy.yaml examples/
  [ "$status" -eq 2 ]
  [[ "$stderr" == "Error: --cache-dir: cannot keep compiled modules in $BATS_TEST_TMPDIR/file/cache: "* ]]
}

@test "check: manifests from stdin, JSON out, nothing rejected" {
  if [ ! -x "$BATS_TEST_DIRNAME/target/debug/policy-runner" ]; then
    skip "the project's runner is not built (cargo test builds it)"
  fi
  run --separate-stderr bash -c "cat examples/manifests/node-agent.yaml | '$BATS_TEST_DIRNAME/target/debug/policy-runner' check '$POLICY' --settings-json '{\"criteria\":\"doesNotContainOtherThan\",\"values\":[\"example.com/*\"]}' --output json -"
  [ "$status" -eq 0 ]
  [[ "$output" == *'"checked": 3'* ]]
  [[ "$output" == *'"rejected": 0'* ]]
}

@test "check: a repository's other files are noted and skipped, exit 0" {
  mkdir -p "$BATS_TEST_TMPDIR/repo/chart" "$BATS_TEST_TMPDIR/repo/.github"
  cp examples/manifests/report.yaml "$BATS_TEST_TMPDIR/repo/"
  printf '{"name": "site"}\n' > "$BATS_TEST_TMPDIR/repo/package.json"
  printf 'apiVersion: v2\nname: shop\n' > "$BATS_TEST_TMPDIR/repo/chart/Chart.yaml"
  printf 'not: [yaml\n' > "$BATS_TEST_TMPDIR/repo/.github/broken.yml"
  runner_check --policy examples/cluster-admission-policy.yaml "$BATS_TEST_TMPDIR/repo"
  [ "$status" -eq 0 ]
  [[ "$output" == *"package.json:1: not a Kubernetes object (a mapping, without a \`kind\`): skipped"* ]]
  [[ "$output" == *"Chart.yaml:1: a Helm chart: its files"* ]]
  [[ "$output" == *"repo:1: hidden directories left out:"* ]]
  [[ "$output" != *"broken.yml"* ]]
  [[ "$output" == *", 3 skipped (1 to render first)" ]]
  runner_check --strict --policy examples/cluster-admission-policy.yaml "$BATS_TEST_DIRNAME/examples/manifests/report.yaml" "$BATS_TEST_TMPDIR/repo"
  [ "$status" -eq 2 ]
}

@test "check: a file that parses is judged whole, braces and all, from a path or stdin alike" {
  if [ ! -x "$BATS_TEST_DIRNAME/target/debug/policy-runner" ]; then
    skip "the project's runner is not built (cargo test builds it)"
  fi
  local file="$BATS_TEST_TMPDIR/rendered.yaml"
  printf -- '---\n# Source: shop/templates/deployment.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: shop}\nspec:\n  selector: {matchLabels: {app: shop}}\n  template:\n    metadata: {labels: {app: shop}}\n    spec: {containers: [{name: app, image: i, args: ["--format", "{{.Time}}"]}]}\n' > "$file"
  runner_check --policy examples/cluster-admission-policy.yaml "$file"
  [ "$status" -eq 1 ]
  local from_path="${lines[-1]}"
  run --separate-stderr bash -c "'$BATS_TEST_DIRNAME/target/debug/policy-runner' check '$POLICY' --policy examples/cluster-admission-policy.yaml - < '$file'"
  [ "$status" -eq 1 ]
  [ "${lines[-1]}" = "$from_path" ]
  [[ "$from_path" == "3 objects checked, 3 rejected"* ]]
}

@test "the runner's command line: help and version on stdout, usage errors exit 2" {
  if [ ! -x "$BATS_TEST_DIRNAME/target/debug/policy-runner" ]; then
    skip "the project's runner is not built (cargo test builds it)"
  fi
  runner="$BATS_TEST_DIRNAME/target/debug/policy-runner"
  run --separate-stderr "$runner" check --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"--kubectl-apply"*"--no-derived"*"--output"* ]]
  [ -z "$stderr" ]
  run --separate-stderr "$runner" --version
  [ "$status" -eq 0 ]
  [[ "$output" == "policy-runner $(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)" ]]
  run --separate-stderr "$runner" check "$POLICY" --settings-json '{}' --settings-json '{}' examples/
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"cannot be used multiple times"* ]]
  run --separate-stderr "$runner" check README.md --settings-json '{"criteria":"containsAnyOf","values":["a"]}' examples/
  [ "$status" -eq 2 ]
  [ "$stderr" = "Error: README.md: not a WebAssembly module (a module's first bytes are \\0asm)" ]
  { echo '---'; cat examples/cluster-admission-policy.yaml; echo '---'; } > "$BATS_TEST_TMPDIR/policy.yaml"
  runner_check --policy "$BATS_TEST_TMPDIR/policy.yaml" examples/
  [ "$status" -eq 1 ]
  [[ "$output" == *"6 objects checked, 1 rejected"* ]]
  { cat examples/cluster-admission-policy.yaml; echo '---'; cat examples/cluster-admission-policy.yaml; } > "$BATS_TEST_TMPDIR/two.yaml"
  runner_check --policy "$BATS_TEST_TMPDIR/two.yaml" examples/
  [ "$status" -eq 2 ]
  [[ "$stderr" == *"two.yaml holds 2 documents: give one policy, or one set of settings, a file" ]]
}

@test "check: unusable input and settings exit 2" {
  printf 'kind: Pod\n' > "$BATS_TEST_TMPDIR/bad.yaml"
  runner_check --settings-json '{"criteria":"containsAnyOf","values":["a"]}' "$BATS_TEST_TMPDIR/bad.yaml"
  [ "$status" -eq 2 ]
  [[ "$output" == *"bad.yaml:1: not a Kubernetes object: no \`apiVersion\`"* ]]
  runner_check --settings-json '{"criteria":"containsAnyOf","values":[]}' examples/
  [ "$status" -eq 2 ]
  [[ "$stderr" == *'`values` is empty'* ]]
}

# The base URL that `serve` says, in its log, it listens on: waited for
# up to 5 s.
served_url() {
  local url=""
  for _ in $(seq 50); do
    url=$(sed -n 's#^serve: listening on \(https://[^/]*\)/.*#\1#p' "$1")
    [ -n "$url" ] && break
    sleep 0.1
  done
  echo "$url"
}

# `serve` stands in for policy-server in the cluster tests (cluster/run): an
# AdmissionReview over HTTPS in, the AdmissionReview the API server reads out.
@test "serve: answers AdmissionReview v1 over HTTPS, and refuses to start with invalid settings" {
  local runner="$BATS_TEST_DIRNAME/target/debug/policy-runner" dir="$BATS_TEST_TMPDIR"
  if [ ! -x "$runner" ]; then
    skip "build the runner first (cargo build -p policy-host)"
  fi
  run --separate-stderr "$runner" serve "$POLICY" --settings-json '{"criteria":"containsAllOf","values":[]}' --cert x --key y
  [ "$status" -eq 1 ]
  [[ "$stderr" == *'the settings of the policy are not valid'*'`values` is empty'* ]]
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -keyout "$dir/key.pem" -out "$dir/cert.pem" -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
  "$runner" serve "$POLICY" --settings-json "$ALLOWLIST" --listen 127.0.0.1:0 \
    --cert "$dir/cert.pem" --key "$dir/key.pem" --record "$dir/reviews.jsonl" 2>"$dir/serve.log" &
  local pid=$!
  local url
  url=$(served_url "$dir/serve.log")
  run curl -sS --cacert "$dir/cert.pem" -H 'Content-Type: application/json' \
    --data-binary @test_data/cluster/recorded/1.37/pod-create-kubernetes-admin.json "$url/validate/allowlist"
  [ "$status" -eq 0 ]
  [[ "$output" == '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"allowed":false,'* ]]
  [[ "$output" == *'remove \"kubernetes.io/config.mirror\""'* ]]
  # The audit scanner's call: the kubelet's mirror Pod, as stored, passes.
  audit_review cluster/recorded/1.37/pod-create-node.json . > "$dir/audit.json"
  run curl -sS --cacert "$dir/cert.pem" -H 'Content-Type: application/json' \
    --data-binary @"$dir/audit.json" "$url/audit/allowlist"
  [ "$status" -eq 0 ]
  [[ "$output" == '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"allowed":true,'* ]]
  # Where the two reviews' time went: three connections (this one's too),
  # two reviews.
  local metrics
  metrics=$(curl -sS --cacert "$dir/cert.pem" "$url/metrics")
  kill "$pid"
  [[ "$metrics" == *$'\npolicy_runner_serve_handshake_seconds_count 3\n'* ]]
  [[ "$metrics" == *$'\npolicy_runner_serve_review_seconds_count 2\n'* ]]
  [[ "$metrics" == *$'\npolicy_runner_serve_review_module_seconds_count 2\n'* ]]
  [[ "$metrics" == *$'\npolicy_runner_serve_instances_total '[12]$'\n'* ]]
  [ "$(wc -l < "$dir/reviews.jsonl")" -eq 2 ]
  # A policy group: its message, and the member that rejected in the causes.
  "$runner" serve "$POLICY" --policy cluster/policies/owned-and-allowed.yaml --listen 127.0.0.1:0 \
    --cert "$dir/cert.pem" --key "$dir/key.pem" 2>"$dir/group.log" &
  pid=$!
  url=$(served_url "$dir/group.log")
  run curl -sS --cacert "$dir/cert.pem" -H 'Content-Type: application/json' \
    --data-binary @test_data/cluster/recorded/1.37/pod-create-kubernetes-admin.json "$url/validate/owned-and-allowed"
  kill "$pid"
  [ "$status" -eq 0 ]
  [[ "$output" == *'"allowed":false,"status":{"details":{"causes":[{"field":"spec.policies.allowed","message":"Pod \"shop/debug-shell\" carries annotations outside'* ]]
  [[ "$output" == *'}]},"message":"workloads must name their owner and carry no annotation outside example.com/"}'* ]]
}

# A user's test suite (docs/test.md) in $1: the README's policy (monitor
# mode), the module under test and the example Deployment, and what the
# policy must decide of the Deployment and of its Pod ($2: warn, the truth).
owner_suite() {
  mkdir -p "$1"
  cp examples/cluster-admission-policy.yaml "$1/policy.yaml"
  cp examples/manifests/web.yaml "$1/web.yaml"
  cp "$POLICY" "$1/policy.wasm"
  printf '%s\n' \
    'apiVersion: test.annotations-policy.github.io/v1alpha1' \
    'kind: Test' \
    'metadata: {name: owner}' \
    'policies: [policy.yaml]' \
    'modules:' \
    '  ghcr.io/annotations-policy/policies/annotations:v0.5.0: policy.wasm' \
    'resources: [web.yaml]' \
    'results:' \
    '  - {policy: require-owner, kind: Deployment, resources: [shop/web], result: pass}' \
    '  - policy: require-owner' \
    '    kind: Pod' \
    '    resources: [shop/web-796cb6795c-x7k2p]' \
    "    result: ${2:-warn}" \
    '    message: example\.com/owner' > "$1/policy-test.yaml"
}

# The GitHub Action's steps (action.yml), against a local release directory
# and a stand-in cosign that says what it was asked and answers as told.
@test "action: installs only what cosign verifies, then checks and writes SARIF" {
  local runner="$BATS_TEST_DIRNAME/target/debug/policy-runner" dir="$BATS_TEST_TMPDIR"
  if [ ! -x "$runner" ]; then
    skip "build the runner first (cargo build -p policy-host)"
  fi
  mkdir -p "$dir/releases/v0.4.0" "$dir/bin"
  cp "$runner" "$dir/releases/v0.4.0/policy-runner-linux-x86_64"
  cp "$POLICY" "$dir/releases/v0.4.0/annotated-policy.wasm"
  touch "$dir/releases/v0.4.0/policy-runner-linux-x86_64.bundle.sigstore" "$dir/releases/v0.4.0/annotated-policy.wasm.bundle.sigstore"
  printf '#!/bin/sh\necho "$*" >> "%s/cosign.log"\nexit "${COSIGN_ANSWER:-0}"\n' "$dir" > "$dir/bin/cosign"
  chmod +x "$dir/bin/cosign"
  export ANNOTATIONS_POLICY_RELEASES="file://$dir/releases" ANNOTATIONS_POLICY_VERSION=v0.4.0 COSIGN="$dir/bin/cosign"

  COSIGN_ANSWER=1 ANNOTATIONS_POLICY_DIR="$dir/refused" GITHUB_OUTPUT="$dir/refused.out" \
    run --separate-stderr scripts/action/install
  [ "$status" -eq 1 ]
  [[ "$stderr" == *"policy-runner-linux-x86_64 of v0.4.0 is not signed by https://github.com/annotations-policy/annotations-policy/.github/workflows/release.yml@refs/tags/v0.4.0: removed"* ]]
  [ ! -e "$dir/refused/policy-runner-linux-x86_64" ]

  ANNOTATIONS_POLICY_DIR="$dir/installed" GITHUB_OUTPUT="$dir/install.out" run --separate-stderr scripts/action/install
  [ "$status" -eq 0 ]
  grep -q "^runner=$dir/installed/policy-runner-linux-x86_64$" "$dir/install.out"
  grep -q "^module=$dir/installed/annotated-policy.wasm$" "$dir/install.out"
  [ "$(grep -c -- '--certificate-identity https://github.com/annotations-policy/annotations-policy/.github/workflows/release.yml@refs/tags/v0.4.0 --certificate-oidc-issuer https://token.actions.githubusercontent.com' "$dir/cosign.log")" -eq 3 ]

  ANNOTATIONS_POLICY_VERSION=latest ANNOTATIONS_POLICY_DIR="$dir/x" run --separate-stderr scripts/action/install
  [ "$status" -eq 2 ]

  RUNNER="$dir/installed/policy-runner-linux-x86_64" MODULE="$dir/installed/annotated-policy.wasm" \
    POLICY=examples/cluster-admission-policy.yaml PATHS=$'examples/manifests\nexamples/policy-group.yaml' OUTPUT=github \
    SARIF_FILE="$dir/out.sarif" GITHUB_OUTPUT="$dir/check.out" run --separate-stderr scripts/action/check
  [ "$status" -eq 0 ]
  [[ "$output" == *"::warning file=examples/manifests/web.yaml,line=4,title=Pod shop/web-"* ]]
  grep -q '^status=1$' "$dir/check.out"
  grep -q "^sarif=$dir/out.sarif$" "$dir/check.out"
  [ "$(jq -r '.runs[0].results[0].locations[0].physicalLocation.artifactLocation.uri' "$dir/out.sarif")" = examples/manifests/web.yaml ]

  # A mode check does not know is refused, before anything runs.
  RUNNER="$dir/installed/policy-runner-linux-x86_64" MODULE="$dir/installed/annotated-policy.wasm" MODE=tests \
    POLICY=examples/cluster-admission-policy.yaml GITHUB_OUTPUT="$dir/mode.out" run --separate-stderr scripts/action/check
  [ "$status" -eq 0 ]
  [[ "$stderr" == *"mode 'tests' is neither check nor test"* ]]
  [ "$(cat "$dir/mode.out")" = status=2 ]
}

# mode: test: the Action's test step runs the user's test files with the
# installed runner, and says how they went in `status`.
@test "action: mode test runs the test files and keeps check's inputs and outputs out" {
  local runner="$BATS_TEST_DIRNAME/target/debug/policy-runner" dir="$BATS_TEST_TMPDIR"
  if [ ! -x "$runner" ]; then
    skip "build the runner first (cargo build -p policy-host)"
  fi
  owner_suite "$dir/repo/policy/tests/owner"
  # The Action's step sets every input; those of check are empty here
  # (POLICY, which this file exports as the module, in each command).
  export RUNNER="$runner" MODULE= SETTINGS= SARIF_FILE=

  POLICY= PATHS=$'policy/tests\n' OUTPUT=junit GITHUB_OUTPUT="$dir/met.out" \
    run --separate-stderr bash -c 'cd "$1/repo" && exec "$2"' _ "$dir" "$BATS_TEST_DIRNAME/scripts/action/test"
  [ "$status" -eq 0 ]
  [[ "$output" == '<?xml'*'<testsuite'*'name="owner"'* ]]
  [[ "$output" != *'<failure'* ]]
  [ "$(cat "$dir/met.out")" = status=0 ]

  # An expectation the policy does not meet: the step still succeeds, and
  # the status (1) fails the job.
  owner_suite "$dir/repo/policy/tests/owner" fail
  POLICY= PATHS="$dir/repo/policy/tests" GITHUB_OUTPUT="$dir/unmet.out" run --separate-stderr scripts/action/test
  [ "$status" -eq 0 ]
  [[ "$output" == *'TEST'*'EXPECTED'*'GOT'* ]]
  [[ "$output" == *'1 passed, 1 failed'* ]]
  [ "$(cat "$dir/unmet.out")" = status=1 ]
  POLICY= PATHS="$dir/repo/policy/tests" OUTPUT=json GITHUB_OUTPUT="$dir/unmet.json.out" run --separate-stderr scripts/action/test
  [ "$(jq -r '.results[] | select(.passed | not) | "\(.object) \(.expected) \(.got)"' <<< "$output")" = \
    "Pod shop/web-796cb6795c-x7k2p fail warn" ]
  [ "$(cat "$dir/unmet.json.out")" = status=1 ]

  # The module input runs every policy, whatever the test file maps.
  owner_suite "$dir/repo/policy/tests/owner"
  sed -i 's|: policy.wasm$|: missing.wasm|' "$dir/repo/policy/tests/owner/policy-test.yaml"
  POLICY= PATHS="$dir/repo/policy/tests" GITHUB_OUTPUT="$dir/unmapped.out" run --separate-stderr scripts/action/test
  [ "$(cat "$dir/unmapped.out")" = status=2 ]
  [[ "$stderr" == *"missing.wasm"* ]]
  MODULE="$(realpath "$POLICY")" POLICY= PATHS="$dir/repo/policy/tests" GITHUB_OUTPUT="$dir/module.out" \
    run --separate-stderr scripts/action/test
  [[ "$output" == *'2 passed, 0 failed'* ]]
  [ "$(cat "$dir/module.out")" = status=0 ]

  # No test file: status 2.
  POLICY= PATHS="$dir/repo/policy/tests/none" GITHUB_OUTPUT="$dir/none.out" run --separate-stderr scripts/action/test
  [ "$status" -eq 0 ]
  [ "$(cat "$dir/none.out")" = status=2 ]

  # check's outputs and inputs are refused by name, before the runner runs.
  local format
  for format in github sarif; do
    POLICY= PATHS="$dir/repo/policy/tests" OUTPUT=$format GITHUB_OUTPUT="$dir/$format.out" run --separate-stderr scripts/action/test
    [ "$status" -eq 0 ]
    [ -z "$output" ]
    [[ "$stderr" == "test: output '$format' is for mode check only: with mode test, give table, json or junit" ]]
    [ "$(cat "$dir/$format.out")" = status=2 ]
  done
  PATHS="$dir/repo/policy/tests" POLICY=examples/cluster-admission-policy.yaml GITHUB_OUTPUT="$dir/policy.out" \
    run --separate-stderr scripts/action/test
  [[ "$stderr" == *"the policy input is for mode check"* ]]
  [ "$(cat "$dir/policy.out")" = status=2 ]
  POLICY= PATHS="$dir/repo/policy/tests" SARIF_FILE=annotations-policy.sarif GITHUB_OUTPUT="$dir/sarif-file.out" \
    run --separate-stderr scripts/action/test
  [[ "$stderr" == *"the upload-sarif input is for mode check"* ]]
  [ "$(cat "$dir/sarif-file.out")" = status=2 ]
}

# .pre-commit-hooks.yaml, as pre-commit runs it: its entry, the user's args,
# then the staged files.
@test "pre-commit hook: the entry with args and staged files judges them" {
  local runner="$BATS_TEST_DIRNAME/target/debug/policy-runner"
  if [ ! -x "$runner" ]; then
    skip "build the runner first (cargo build -p policy-host)"
  fi
  local entry
  entry=$(sed -n '/^- id: annotations-policy-check$/,/^- id:/s/^  entry: //p' .pre-commit-hooks.yaml)
  [ "$entry" = "policy-runner check" ]
  PATH="$(dirname "$runner"):$PATH" run --separate-stderr $entry "$POLICY" --policy examples/cluster-admission-policy.yaml \
    examples/manifests/web.yaml .pre-commit-hooks.yaml
  [ "$status" -eq 1 ]
  [[ "$output" == *'lacks required annotations; add "example.com/owner"'* ]]
  [[ "$output" == *"note: .pre-commit-hooks.yaml:"*": not a Kubernetes object"* ]]
  [[ "$output" == *"1 rejected, 1 skipped"* ]]
}

# The test hook passes no file name (pass_filenames: false): its entry and
# the user's args (the directories of the test files) are the command.
@test "pre-commit hook: the test entry with args runs the test files" {
  local runner="$BATS_TEST_DIRNAME/target/debug/policy-runner" dir="$BATS_TEST_TMPDIR"
  if [ ! -x "$runner" ]; then
    skip "build the runner first (cargo build -p policy-host)"
  fi
  local entry
  entry=$(sed -n '/^- id: annotations-policy-test$/,/^- id:/s/^  entry: //p' .pre-commit-hooks.yaml)
  [ "$entry" = "policy-runner test" ]
  grep -A8 '^- id: annotations-policy-test$' .pre-commit-hooks.yaml | grep -qx '  pass_filenames: false'
  owner_suite "$dir/tests/owner"
  PATH="$(dirname "$runner"):$PATH" run --separate-stderr $entry "$dir/tests"
  [ "$status" -eq 0 ]
  [[ "$output" == *"2 passed, 0 failed"* ]]
  owner_suite "$dir/tests/owner" pass
  PATH="$(dirname "$runner"):$PATH" run --separate-stderr $entry "$dir/tests"
  [ "$status" -eq 2 ]
  [[ "$stderr" == *'`message` with `result: pass`'* ]]
  owner_suite "$dir/tests/owner" fail
  PATH="$(dirname "$runner"):$PATH" run --separate-stderr $entry "$dir/tests"
  [ "$status" -eq 1 ]
  [[ "$output" == *"1 passed, 1 failed"* ]]
}

# Colour on a terminal (script(1) gives the runner one), never with NO_COLOR.
@test "check: colour on a terminal, none where NO_COLOR is set" {
  local runner="$BATS_TEST_DIRNAME/target/debug/policy-runner"
  if [ ! -x "$runner" ] || ! command -v script >/dev/null; then
    skip "needs the runner and script(1)"
  fi
  local command="'$runner' check '$POLICY' --policy examples/cluster-admission-policy.yaml examples/manifests/web.yaml"
  run script -qec "$command" /dev/null
  [[ "$output" == *$'\e[38;5;9m rejected \e[39m'* ]]
  NO_COLOR=1 run script -qec "$command" /dev/null
  [[ "$output" == *'rejected'* ]]
  [[ "$output" != *$'\e['* ]]
}

# Every execution mode, with the project's own test policies
# (evaluator/tests/policies/, built and annotated into target/test-policies/
# by `cargo test -p policy-evaluator`, which `make test` runs first): the
# same lines under kwctl and under the runner.

modes_built() {
  if [ ! -f "$BATS_TEST_DIRNAME/target/test-policies/wapc.wasm" ]; then
    skip "the test policies are not built: cargo test -p policy-evaluator builds them"
  fi
}

mode_run() {
  local module="$1" request="$2"
  shift 2
  run --separate-stderr $RUNNER "target/test-policies/$module" -r "test_data/modes/$request" "$@"
}

patch_of() {
  jq -r '.patch | @base64d' <<<"$output"
}

@test "waPC: a mutation is printed as kwctl prints it, its JSONPatch base64-encoded" {
  modes_built
  mode_run wapc.wasm pod-open.json --settings-json '{"annotation":"example.com/checked"}'
  accepted
  [[ "$output" == *'"patchType":"JSONPatch"'* ]]
  [ "$(patch_of)" = '[{"op":"add","path":"/metadata/annotations","value":{"example.com/checked":"yes"}}]' ]
}

@test "waPC: a lookup answered from a kwctl session file rejects, and without access is refused" {
  modes_built
  mode_run wapc.wasm pod-closed.json --settings-json '{"annotation":"a","denyLabel":"locked"}' \
    --allow-context-aware --replay-host-capabilities-interactions test_data/modes/session-closed.yml
  rejected_with 'Namespace closed is labelled locked=true'
  mode_run wapc.wasm pod-closed.json --settings-json '{"annotation":"a","denyLabel":"locked"}' \
    --replay-host-capabilities-interactions test_data/modes/session-closed.yml
  rejected_with 'cannot look up Namespace closed: Policy has not been granted access to Kubernetes v1/Namespace resources. The violation has been reported.'
}

@test "waPC: a guest error in validate_settings is invalid settings, in kwctl's words" {
  modes_built
  mode_run wapc.wasm pod-open.json --settings-json '{"fail":true}'
  [ "$status" -eq 1 ]
  [[ "$stderr" == *'Provided settings are not valid: Error invoking settings validation callback: GuestCallFailure('*'settings validation failed on request'* ]]
}

@test "WASI: a Go program rejects, and mutates with a label" {
  modes_built
  mode_run wasi.wasm pod-debug.json --settings-json '{"forbidden":"debug"}'
  rejected_with 'name debug-shell contains debug'
  mode_run wasi.wasm pod-open.json --settings-json '{"forbidden":"debug","label":"team"}'
  accepted
  [ "$(patch_of)" = '[{"op":"add","path":"/metadata/labels/team","value":"wasi"}]' ]
}

@test "opa and gatekeeper: Rego run in the mode the metadata gives, or -e for a bare module" {
  modes_built
  mode_run opa.wasm pod-closed.json --settings-json '{"denied_namespaces":["closed"]}'
  rejected_with 'namespace closed is denied'
  mode_run raw/opa.wasm pod-closed.json -e opa --settings-json '{"denied_namespaces":["closed"]}'
  rejected_with 'namespace closed is denied'
  mode_run gatekeeper.wasm pod-open.json --settings-json '{"labels":["team"]}'
  rejected_with 'missing label team'
  mode_run raw/gatekeeper.wasm pod-open.json -e gatekeeper --settings-json '{"labels":["app"]}'
  accepted
}

@test "a policy whose spec.mutating is false is refused when it mutates" {
  modes_built
  printf '%s\n' 'apiVersion: policies.kubewarden.io/v1' 'kind: ClusterAdmissionPolicy' \
    'metadata:' '  name: checked' 'spec:' \
    "  module: file://$BATS_TEST_DIRNAME/target/test-policies/wapc.wasm" \
    '  mutating: false' '  rules: []' '  settings:' '    annotation: example.com/checked' \
    >"$BATS_TEST_TMPDIR/policies.yaml"
  run --separate-stderr $RUNNER "$BATS_TEST_TMPDIR/policies.yaml" -r test_data/modes/pod-open.json
  rejected_with 'Request rejected by policy checked. The policy attempted to mutate the request, but it is currently configured to not allow mutations.'
  [[ "$output" != *'"patch"'* ]]
}

@test "run: lookups answered from a cluster dump, recorded to a session that replays the same line" {
  modes_built
  if [[ "$RUNNER" == kwctl* ]]; then
    skip "--cluster-objects is policy-runner's: kwctl asks the cluster of the kubeconfig"
  fi
  local settings='{"forbidden":"debug","maxConfigMaps":1}' session="$BATS_TEST_TMPDIR/session.yml"
  mode_run wasi.wasm pod-open.json --settings-json "$settings" --allow-context-aware \
    --cluster-objects test_data/modes/cluster.yaml --record-host-capabilities-interactions "$session"
  rejected_with 'Namespace open holds 2 ConfigMaps, more than 1'
  local recorded="$output"
  grep -q '!KubernetesListResourceNamespace' "$session"
  mode_run wasi.wasm pod-open.json --settings-json "$settings" --allow-context-aware \
    --replay-host-capabilities-interactions "$session"
  [ "$output" = "$recorded" ]
  # Nothing answers: the call fails, naming what would answer it.
  mode_run wasi.wasm pod-open.json --settings-json "$settings" --allow-context-aware
  rejected_with 'policy-runner does not answer the host capability kubernetes/list_resources_by_namespace here'
}

@test "check: a context-aware policy's lookups are answered from the objects checked" {
  modes_built
  if [ ! -x "$BATS_TEST_DIRNAME/target/debug/policy-runner" ]; then
    skip "policy-runner is not built"
  fi
  run --separate-stderr "$BATS_TEST_DIRNAME/target/debug/policy-runner" check target/test-policies/wapc.wasm \
    --settings-json '{"annotation":"example.com/checked","denyLabel":"locked"}' --allow-context-aware \
    --no-derived --output json test_data/modes/manifests/
  [ "$status" -eq 1 ]
  [ "$(jq -r '.results[] | select(.allowed == false) | .object' <<<"$output")" = "Pod closed/web" ]
  [[ "$(jq -r '.results[] | select(.allowed == false) | .message' <<<"$output")" == *'Namespace closed is labelled locked=true'* ]]
}

# The hostile test policies (evaluator/tests/policies/hostile-*), which
# misbehave as their settings say. kwctl has no deadline, so a loop runs
# under the runner alone; what kwctl answers too (a trap, an answer that is
# not JSON) runs under $RUNNER.

hostile_runner() {
  "$BATS_TEST_DIRNAME/target/debug/policy-runner" "$@"
}

# A ClusterAdmissionPolicy named $1 for Pods, on the hostile module $2,
# with settings $3 and, optionally, one more line of its spec ($4).
hostile_policy() {
  printf 'apiVersion: policies.kubewarden.io/v1\nkind: ClusterAdmissionPolicy\nmetadata:\n  name: %s\n' "$1"
  printf 'spec:\n  module: %s\n' "$BATS_TEST_DIRNAME/target/test-policies/$2.wasm"
  printf '  rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]\n'
  printf '  settings: %s\n' "$3"
  [ -z "${4:-}" ] || printf '  %s\n' "$4"
}

@test "hostile: a loop is cut at --policy-timeout, exit 1, naming the policy and the deadline" {
  modes_built
  for module in hostile-wapc hostile-wasi; do
    run --separate-stderr hostile_runner run --policy-timeout 1 "target/test-policies/$module.wasm" \
      -r test_data/modes/pod-open.json --settings-json '{"validate":"loop"}'
    [ "$status" -eq 1 ]
    [ -z "$output" ]
    [[ "$stderr" == "Error: target/test-policies/$module.wasm: interrupted at the deadline of 1 s: the evaluation took too long" ]]
    # Settings that loop are invalid settings, which say the deadline.
    run --separate-stderr hostile_runner run --policy-timeout 1 "target/test-policies/$module.wasm" \
      -r test_data/modes/pod-open.json --settings-json '{"validateSettings":"loop"}'
    [ "$status" -eq 1 ]
    [[ "$stderr" == "Error: Provided settings are not valid: interrupted at the deadline of 1 s"* ]]
    # A nap within the deadline passes.
    run --separate-stderr hostile_runner run --policy-timeout 1 "target/test-policies/$module.wasm" \
      -r test_data/modes/pod-open.json --settings-json '{"validate":"sleep","sleepMilliseconds":200}'
    accepted
  done
}

@test "hostile: a policy's timeoutEvalSeconds is its deadline, and --disable-timeout-protection lifts it" {
  modes_built
  hostile_policy sleepy hostile-wapc '{validate: sleep, sleepMilliseconds: 3000}' 'timeoutEvalSeconds: 2' \
    > "$BATS_TEST_TMPDIR/sleepy.yaml"
  run --separate-stderr hostile_runner run --policy-timeout 10 "$BATS_TEST_TMPDIR/sleepy.yaml" \
    -r test_data/modes/pod-open.json
  [ "$status" -eq 1 ]
  [[ "$stderr" == "Error: policy sleepy: interrupted at the deadline of 2 s: the evaluation took too long" ]]
  run --separate-stderr hostile_runner run --disable-timeout-protection "$BATS_TEST_TMPDIR/sleepy.yaml" \
    -r test_data/modes/pod-open.json
  accepted
}

@test "hostile: a trap and an answer that is not JSON are 500 rejections, as kwctl prints them" {
  modes_built
  for module in hostile-wapc hostile-wasi; do
    mode_run "$module.wasm" pod-open.json --settings-json '{"validate":"trap"}'
    [ "$status" -eq 0 ]
    [[ "$output" == *'"allowed":false'*'"code":500'* ]]
    mode_run "$module.wasm" pod-open.json --settings-json '{"validate":"garbage"}'
    [ "$status" -eq 0 ]
    [[ "$output" == *'"allowed":false'*'"code":500'* ]]
  done
}

@test "hostile: memory past --max-memory fails the evaluation" {
  modes_built
  # The runner alone: kwctl sets no cap, and would let the guest take 4 GiB.
  for module in hostile-wapc hostile-wasi; do
    run --separate-stderr hostile_runner run --max-memory 64 "target/test-policies/$module.wasm" \
      -r test_data/modes/pod-open.json --settings-json '{"validate":"memory"}'
    [ "$status" -eq 0 ]
    [[ "$output" == *'"allowed":false'*'"code":500'* ]]
  done
  [[ "$stderr" == *'hostile-wasi.wasm: the guest needed more than its 64 MiB of memory'* ]]
}

@test "check: a looping policy's objects are rows of their own, the other policy judges them all, exit 2" {
  modes_built
  local dir="$BATS_TEST_TMPDIR/set"
  mkdir -p "$dir"
  hostile_policy loops hostile-wapc '{validate: loop}' > "$dir/loop.yaml"
  sed "s#module: .*#module: $BATS_TEST_DIRNAME/$POLICY#" examples/cluster-admission-policy.yaml > "$dir/annotations.yaml"
  run --separate-stderr hostile_runner check --policy-timeout 1 --policy "$dir" -o json examples/
  [ "$status" -eq 2 ]
  [ "$(jq '.failed' <<<"$output")" -ge 1 ]
  jq -e '[.results[] | select(.failed)] | all(.message | startswith("loops: interrupted at the deadline of 1 s"))' <<<"$output"
  # Every object is judged by the other policy.
  [ "$(jq '[.results[] | select(.policies | any(.policy == "require-owner"))] | length' <<<"$output")" -eq "$(jq '.checked' <<<"$output")" ]
}

@test "serve: a review whose evaluation loops gets policy-server's answer at the deadline, and the next is judged" {
  modes_built
  local runner="$BATS_TEST_DIRNAME/target/debug/policy-runner" dir="$BATS_TEST_TMPDIR"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -keyout "$dir/key.pem" -out "$dir/cert.pem" -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
  for module in hostile-wapc hostile-wasi; do
    "$runner" serve --policy-timeout 1 "target/test-policies/$module.wasm" --settings-json '{}' \
      --listen 127.0.0.1:0 --cert "$dir/cert.pem" --key "$dir/key.pem" 2>"$dir/serve.log" &
    local pid=$!
    local url
    url=$(served_url "$dir/serve.log")
    jq '.request.object.metadata.annotations = {"hostile.example.com/validate": "loop"}' \
      test_data/modes/pod-open.json > "$dir/loop.json"
    run curl -sS --max-time 10 --cacert "$dir/cert.pem" -H 'Content-Type: application/json' \
      --data-binary @"$dir/loop.json" "$url/validate/hostile"
    local looped="$output"
    run curl -sS --max-time 10 --cacert "$dir/cert.pem" -H 'Content-Type: application/json' \
      --data-binary @test_data/modes/pod-open.json "$url/validate/hostile"
    kill "$pid"
    [ "$(jq -c '.response | [.allowed, .status.code]' <<<"$looped")" = '[false,500]' ]
    if [ "$module" = hostile-wapc ]; then
      [ "$(jq -r '.response.status.message' <<<"$looped")" = \
        "Policy execution interrupted because it exceeded the allowed execution time" ]
    fi
    [ "$(jq -c '.response.allowed' <<<"$output")" = true ]
  done
}

@test "check: a group that accepts whatever its failed member answered admits the object, and says the failure" {
  modes_built
  local dir="$BATS_TEST_TMPDIR/group"
  mkdir -p "$dir"
  local module="$BATS_TEST_DIRNAME/target/test-policies/hostile-wapc.wasm"
  printf 'apiVersion: policies.kubewarden.io/v1\nkind: ClusterAdmissionPolicyGroup\nmetadata:\n  name: either\nspec:\n' > "$dir/group.yaml"
  printf '  rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]\n' >> "$dir/group.yaml"
  printf '  expression: "loops() || sane()"\n  message: neither accepts\n  policies:\n' >> "$dir/group.yaml"
  printf '    loops: {module: %s, settings: {validate: loop}}\n    sane: {module: %s, settings: {}}\n' "$module" "$module" >> "$dir/group.yaml"
  run --separate-stderr hostile_runner check --policy-timeout 1 --policy "$dir/group.yaml" -o json examples/manifests/web.yaml
  [ "$status" -eq 0 ]
  [ "$(jq '.failed' <<<"$output")" -eq 0 ]
  [ "$(jq '[.results[] | select(.allowed | not)] | length' <<<"$output")" -eq 0 ]
  jq -e '.warnings | any(startswith("either (member loops): interrupted at the deadline of 1 s"))' <<<"$output"
}
