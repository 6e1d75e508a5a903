// A WASI (`wasi` execution mode) policy for the evaluator's tests that does
// what no policy should, so that the tests hold the runner to bounding it.
//
// Settings: {"validate": "<how>", "validateSettings": "<how>",
// "sleepMilliseconds": <n>}, each optional. `validate` and
// `validate-settings` do as their field says, or, without it, accept and
// find the settings valid; an object annotated
// `hostile.example.com/validate: <how>` says how `validate` does instead.
// <how> is one of:
//   - loop: spins for ever;
//   - sleep: sleeps sleepMilliseconds in naps of 100 ms, then answers as
//     without the field;
//   - memory: takes 1 MiB more of memory, and writes to it, until the Go
//     runtime gives up;
//   - trap: writes outside linear memory (a WebAssembly trap, not a Go
//     panic);
//   - recurse: calls itself until Go's stack limit ends the program;
//   - garbage: answers bytes that are not JSON;
//   - shape: answers JSON of the wrong shape;
//   - huge: answers a valid verdict of 40 MiB (its message);
//   - exit: exits with status 3, a message on stderr;
//   - silent: exits with status 0 and writes nothing;
//   - spew: writes to stdout without end;
//   - spewStderr: writes to stderr without end.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unsafe"
)

type settings struct {
	Validate          string `json:"validate"`
	ValidateSettings  string `json:"validateSettings"`
	SleepMilliseconds int    `json:"sleepMilliseconds"`
}

func main() {
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	operation := ""
	if len(os.Args) > 1 {
		operation = os.Args[1]
	}
	var s settings
	switch operation {
	case "validate":
		var payload struct {
			Settings settings `json:"settings"`
			Request  struct {
				Object struct {
					Metadata struct {
						Annotations map[string]string `json:"annotations"`
					} `json:"metadata"`
				} `json:"object"`
			} `json:"request"`
		}
		if err := json.Unmarshal(input, &payload); err != nil {
			fail(err)
		}
		s = payload.Settings
		if how, ok := payload.Request.Object.Metadata.Annotations["hostile.example.com/validate"]; ok {
			s.Validate = how
		}
		misbehave(s.Validate, s, `{"accepted":true}`)
	case "validate-settings":
		if err := json.Unmarshal(input, &s); err != nil {
			fail(err)
		}
		misbehave(s.ValidateSettings, s, `{"valid":true}`)
	default:
		fail(fmt.Errorf("unknown operation %q", operation))
	}
}

var sink []byte

func misbehave(how string, s settings, sane string) {
	switch how {
	case "":
	case "loop":
		n := 0
		for {
			n++
			sink = append(sink[:0], byte(n))
		}
	case "sleep":
		for i := 0; i < s.SleepMilliseconds/100; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	case "memory":
		var held [][]byte
		for {
			chunk := make([]byte, 1<<20)
			for i := range chunk {
				chunk[i] = 1
			}
			held = append(held, chunk)
		}
	case "trap":
		far := (*byte)(unsafe.Pointer(uintptr(0xfffffff0)))
		*far = 1
	case "recurse":
		fmt.Println(recurse(1))
	case "garbage":
		sane = "\x00this is not JSON"
	case "shape":
		sane = `{"accepted":"yes","valid":"yes"}`
	case "huge":
		sane = `{"accepted":true,"valid":true,"message":"` + strings.Repeat("x", 40<<20) + `"}`
	case "exit":
		fmt.Fprintln(os.Stderr, "hostile: exiting with status 3")
		os.Exit(3)
	case "silent":
		os.Exit(0)
	case "spew":
		line := []byte(strings.Repeat("y", 1023) + "\n")
		for {
			os.Stdout.Write(line)
		}
	case "spewStderr":
		line := []byte(strings.Repeat("z", 1023) + "\n")
		for {
			os.Stderr.Write(line)
		}
	default:
		fail(fmt.Errorf("unknown behaviour %q", how))
	}
	fmt.Print(sane)
}

func recurse(depth int) int {
	var frame [64]byte
	frame[0] = byte(depth)
	return recurse(depth+1) + int(frame[depth%64])
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
