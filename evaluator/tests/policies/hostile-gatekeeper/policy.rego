# A `gatekeeper` execution mode policy for the evaluator's tests that
# takes as long, and as much memory, as its settings say (Rego v1).
#
# Settings (the parameters): {"n": <int>}: n² steps over one list of n
# numbers, as hostile-opa takes; a violation where any step is true, which
# none is. Without n: no violation at once.
package policy

import rego.v1

default n := 0

n := input.parameters.n

numbers_up_to_n := numbers.range(1, n)

violation contains {"msg": "a step was true"} if {
	some i in numbers_up_to_n
	some j in numbers_up_to_n
	i + j < 0
}
