module example.com/evaluator-test-hostile-wasi

go 1.26
