# The benchmark's two rules for conftest (OPA), one document at a time: a
# workload (the kinds in metadata.yml) names its owner, and carries no
# annotation outside example.com/ but the keys of docs/kubernetes-keys.md's table of
# those Kubernetes writes itself (allowed everywhere: conftest cannot tell
# who sends a request from a file).
package main

workloads := {
	"v1": {"Pod", "ReplicationController"},
	"apps/v1": {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"},
	"batch/v1": {"Job", "CronJob"},
}

workload if workloads[input.apiVersion][input.kind]

named := sprintf("%v %v/%v", [input.kind, input.metadata.namespace, input.metadata.name]) if {
	input.metadata.namespace
} else := sprintf("%v default/%v", [input.kind, input.metadata.name])

annotations := input.metadata.annotations if {
	input.metadata.annotations
} else := {}

deny contains msg if {
	workload
	not annotations["example.com/owner"]
	msg := sprintf("%v: lacks the annotation example.com/owner", [named])
}

deny contains msg if {
	workload
	some key, _ in annotations
	not allowed(key)
	msg := sprintf("%v: carries %v, outside example.com/", [named, key])
}

allowed(key) if {
	some prefix in {
		"example.com/",
		"kubectl.kubernetes.io/",
		"deployment.kubernetes.io/",
		"container.apparmor.security.beta.kubernetes.io/",
	}
	startswith(key, prefix)
}

allowed(key) if {
	key in {
		"deprecated.daemonset.template.generation",
		"batch.kubernetes.io/cronjob-scheduled-timestamp",
		"batch.kubernetes.io/job-tracking",
		"batch.kubernetes.io/job-completion-index",
		"batch.kubernetes.io/job-index-failure-count",
		"batch.kubernetes.io/job-index-ignored-failure-count",
		"cronjob.kubernetes.io/instantiate",
		"kubernetes.io/change-cause",
		"kubernetes.io/limit-ranger",
		"kubernetes.io/config.hash",
		"kubernetes.io/config.mirror",
		"kubernetes.io/config.seen",
		"kubernetes.io/config.source",
		"kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint",
		"kubeadm.kubernetes.io/etcd.advertise-client-urls",
		"kubeadm.kubernetes.io/component-config.hash",
		"kubernetes.io/psp",
		"alpha.image-policy.k8s.io/failed-open",
	}
}
