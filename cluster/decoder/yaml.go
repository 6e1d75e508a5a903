package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"

	"sigs.k8s.io/yaml"
)

// printYAML reads documents ended by a NUL byte and prints, for each, one JSON
// line: {"json": …} with what kubectl makes of the document, or {"error": "…"}.
// kubectl hands each document its reader cuts to sigs.k8s.io/yaml's Unmarshal
// with a runtime.RawExtension as the target (k8s.io/apimachinery
// pkg/util/yaml, YAMLToJSONDecoder.Decode); RawExtension unmarshals JSON
// itself, so the conversion has no target to coerce scalars to, which is what
// YAMLToJSON does.
func printYAML(in io.Reader, out io.Writer) error {
	data, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(out)
	defer w.Flush()
	encoder := json.NewEncoder(w)
	encoder.SetEscapeHTML(false)
	for _, doc := range bytes.Split(data, []byte{0}) {
		if len(doc) == 0 {
			continue
		}
		var line struct {
			JSON  json.RawMessage `json:"json,omitempty"`
			Error string          `json:"error,omitempty"`
		}
		converted, err := yaml.YAMLToJSON(doc)
		if err != nil {
			line.Error = err.Error()
		} else {
			line.JSON = converted
		}
		if err := encoder.Encode(line); err != nil {
			return err
		}
	}
	return nil
}
