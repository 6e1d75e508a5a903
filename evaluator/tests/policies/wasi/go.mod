module example.com/evaluator-test-wasi

go 1.26
