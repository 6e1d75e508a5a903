# An `opa` execution mode policy for the evaluator's tests (Rego v1).
#
# Kubewarden evaluates the entrypoint `policy/main` with input
# {"request": <AdmissionRequest>} and data = the settings, plus
# `data.kubernetes` when context aware (`data.kubernetes.namespaces[<ns>]`
# for the Namespaces this policy may read), and reads
# `result[0].result.response` as an AdmissionResponse.
#
# Settings: {"denied_namespaces": ["<ns>", ...]}.
#
# A request whose namespace is listed in `denied_namespaces` is rejected
# with `namespace <ns> is denied`; else one whose Namespace is labelled
# `deny: "true"` is rejected with `namespace <ns> is labelled deny=true`;
# anything else is allowed.
package policy

main := {
	"apiVersion": "admission.k8s.io/v1",
	"kind": "AdmissionReview",
	"response": response,
}

default uid := ""

uid := input.request.uid

# The object's namespace, else the request's.
namespace := ns if {
	ns := input.request.object.metadata.namespace
	ns != ""
} else := ns if {
	ns := input.request.namespace
	ns != ""
}

reason := sprintf("namespace %s is denied", [namespace]) if {
	data.denied_namespaces[_] == namespace
} else := sprintf("namespace %s is labelled deny=true", [namespace]) if {
	data.kubernetes.namespaces[namespace].metadata.labels.deny == "true"
}

response := {
	"uid": uid,
	"allowed": false,
	"status": {"message": reason},
} if {
	reason
} else := {
	"uid": uid,
	"allowed": true,
}
