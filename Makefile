.PHONY: run test bench
run:
	scripts/quickstart.sh
test:
	scripts/test.sh
bench:
	bench/run.sh
