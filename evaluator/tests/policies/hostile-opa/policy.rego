# An `opa` execution mode policy for the evaluator's tests that takes as
# long, and as much memory, as its settings say (Rego v1).
#
# Settings: {"n": <int>}: the evaluation takes n² steps over one list of n
# numbers, none of them true, each step a number on OPA's heap, which an
# evaluation never frees: n = 100 is quick; n = 30000 runs for seconds and
# takes about 500 MB a second until its deadline or its memory cap stops
# it. Without n: accepted at once.
package policy

import rego.v1

default n := 0

n := data.n

numbers_up_to_n := numbers.range(1, n)

steps := count({1 |
	some i in numbers_up_to_n
	some j in numbers_up_to_n
	i + j < 0
})

main := {"response": {"uid": input.request.uid, "allowed": steps == 0}}
