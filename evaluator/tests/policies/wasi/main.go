// A WASI (`wasi` execution mode) policy for the evaluator's tests, written
// against the standard library alone: Kubewarden runs it as a command,
// `policy.wasm validate` or `policy.wasm validate-settings`, with the input
// JSON on stdin, and reads the answer JSON from stdout.
//
// Settings: {"forbidden": "<substring>", "label": "<key>", "maxConfigMaps": <int>};
// `forbidden` is required, the others optional.
//
// validate:
//   - no object (DELETE): accepted;
//   - metadata.name contains `forbidden`: rejected;
//   - `maxConfigMaps` set and the object namespaced: the Namespace's
//     ConfigMaps are listed through the host (kubewarden/kubernetes/
//     list_resources_by_namespace); more than `maxConfigMaps` rejects, and
//     so does a failed listing;
//   - `label` set and absent from metadata.labels: accepted, mutated with
//     `label: "wasi"`;
//   - otherwise accepted.
//
// Input that is not JSON, or settings that are invalid when validating,
// end the program with status 1 and a message on stderr.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unsafe"
)

// hostCall is policy-evaluator's `host`.`call` (wasi_cli/stack_pre.rs):
// binding, namespace, operation and payload as pointer and length pairs;
// it answers 0 when the call succeeded, 1 when it failed, and writes the
// answer (or the error's text) to the program's stdin.
//
//go:wasmimport host call
//go:noescape
func hostCall(
	bindingPtr unsafe.Pointer, bindingLen uint32,
	namespacePtr unsafe.Pointer, namespaceLen uint32,
	operationPtr unsafe.Pointer, operationLen uint32,
	payloadPtr unsafe.Pointer, payloadLen uint32,
) uint32

// callHost makes a host call and reads its answer back from stdin, to its
// end, as the Kubewarden Go SDK does.
func callHost(binding, namespace, operation string, payload []byte) ([]byte, error) {
	failed := hostCall(
		unsafe.Pointer(unsafe.StringData(binding)), uint32(len(binding)),
		unsafe.Pointer(unsafe.StringData(namespace)), uint32(len(namespace)),
		unsafe.Pointer(unsafe.StringData(operation)), uint32(len(operation)),
		unsafe.Pointer(unsafe.SliceData(payload)), uint32(len(payload)),
	) != 0
	answer, err := io.ReadAll(os.Stdin)
	if err != nil {
		return nil, fmt.Errorf("cannot read the host's answer: %w", err)
	}
	if failed {
		return nil, errors.New(string(answer))
	}
	return answer, nil
}

type settings struct {
	forbidden     string
	label         string
	maxConfigMaps int64
	hasMax        bool
}

// parseSettings reads the settings, or names what is wrong with them.
func parseSettings(raw any) (settings, error) {
	var s settings
	obj, ok := raw.(map[string]any)
	if !ok {
		return s, errors.New("settings must be a JSON object")
	}
	switch v := obj["forbidden"].(type) {
	case nil:
		return s, errors.New("forbidden is required")
	case string:
		if v == "" {
			return s, errors.New("forbidden must not be empty")
		}
		s.forbidden = v
	default:
		return s, errors.New("forbidden must be a string")
	}
	switch v := obj["label"].(type) {
	case nil:
	case string:
		if v == "" {
			return s, errors.New("label must not be empty")
		}
		s.label = v
	default:
		return s, errors.New("label must be a string")
	}
	switch v := obj["maxConfigMaps"].(type) {
	case nil:
	case json.Number:
		n, err := strconv.ParseInt(v.String(), 10, 64)
		if err != nil || n < 0 {
			return s, errors.New("maxConfigMaps must be a non-negative integer")
		}
		s.maxConfigMaps, s.hasMax = n, true
	default:
		return s, errors.New("maxConfigMaps must be a non-negative integer")
	}
	return s, nil
}

// decode reads JSON with its numbers kept as written, so that an object
// sent back mutated keeps them exactly.
func decode(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func encode(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		fail("cannot write the answer: %v", err)
	}
	return b.Bytes()
}

type settingsValidationResponse struct {
	Valid   bool   `json:"valid"`
	Message string `json:"message,omitempty"`
}

type validationResponse struct {
	Accepted      bool   `json:"accepted"`
	Message       string `json:"message,omitempty"`
	Code          int    `json:"code,omitempty"`
	MutatedObject any    `json:"mutated_object,omitempty"`
}

func validateSettings(input []byte) []byte {
	raw, err := decode(input)
	if err != nil {
		fail("cannot parse the settings: %v", err)
	}
	if _, err := parseSettings(raw); err != nil {
		return encode(settingsValidationResponse{Valid: false, Message: err.Error()})
	}
	return encode(settingsValidationResponse{Valid: true})
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func validate(input []byte) []byte {
	raw, err := decode(input)
	if err != nil {
		fail("cannot parse the validation request: %v", err)
	}
	payload, _ := raw.(map[string]any)
	s, err := parseSettings(payload["settings"])
	if err != nil {
		fail("invalid settings: %v", err)
	}
	request, _ := payload["request"].(map[string]any)
	object, ok := request["object"].(map[string]any)
	if request["object"] == nil {
		return encode(validationResponse{Accepted: true})
	}
	if !ok {
		return encode(validationResponse{Accepted: false, Message: "the object is not a JSON object"})
	}
	metadata, _ := object["metadata"].(map[string]any)

	if name := str(metadata, "name"); strings.Contains(name, s.forbidden) {
		return encode(validationResponse{
			Accepted: false,
			Message:  fmt.Sprintf("name %s contains %s", name, s.forbidden),
		})
	}

	namespace := str(metadata, "namespace")
	if namespace == "" {
		namespace = str(request, "namespace")
	}
	if s.hasMax && namespace != "" {
		n, err := countConfigMaps(namespace)
		if err != nil {
			return encode(validationResponse{
				Accepted: false,
				Message:  fmt.Sprintf("cannot list ConfigMaps in %s: %v", namespace, err),
			})
		}
		if int64(n) > s.maxConfigMaps {
			return encode(validationResponse{
				Accepted: false,
				Message: fmt.Sprintf("Namespace %s holds %d ConfigMaps, more than %d",
					namespace, n, s.maxConfigMaps),
			})
		}
	}

	if s.label != "" {
		labels, _ := metadata["labels"].(map[string]any)
		if _, present := labels[s.label]; !present {
			if metadata == nil {
				if object["metadata"] != nil {
					return encode(validationResponse{Accepted: false, Message: "metadata is not a JSON object"})
				}
				metadata = map[string]any{}
				object["metadata"] = metadata
			}
			if labels == nil {
				if metadata["labels"] != nil {
					return encode(validationResponse{Accepted: false, Message: "metadata.labels is not a JSON object"})
				}
				labels = map[string]any{}
				metadata["labels"] = labels
			}
			labels[s.label] = "wasi"
			return encode(validationResponse{Accepted: true, MutatedObject: object})
		}
	}
	return encode(validationResponse{Accepted: true})
}

// listResourcesByNamespaceRequest is the SDKs' ListResourcesByNamespaceRequest,
// without selectors or field masks.
type listResourcesByNamespaceRequest struct {
	APIVersion string `json:"api_version"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
}

// countConfigMaps lists the ConfigMaps of `namespace` through the host.
func countConfigMaps(namespace string) (int, error) {
	payload, err := json.Marshal(listResourcesByNamespaceRequest{
		APIVersion: "v1",
		Kind:       "ConfigMap",
		Namespace:  namespace,
	})
	if err != nil {
		return 0, err
	}
	answer, err := callHost("kubewarden", "kubernetes", "list_resources_by_namespace", payload)
	if err != nil {
		return 0, err
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(answer, &list); err != nil {
		return 0, fmt.Errorf("cannot parse the host's answer: %w", err)
	}
	return len(list.Items), nil
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 2 {
		fail("usage: %s validate|validate-settings", os.Args[0])
	}
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("cannot read stdin: %v", err)
	}
	var answer []byte
	switch os.Args[1] {
	case "validate":
		answer = validate(input)
	case "validate-settings":
		answer = validateSettings(input)
	default:
		fail("unknown subcommand %q: expected validate or validate-settings", os.Args[1])
	}
	if _, err := os.Stdout.Write(answer); err != nil {
		fail("cannot write the answer: %v", err)
	}
}
