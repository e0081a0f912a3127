-- Adds the scenario's signature (SIGNATURE_INPUT, SIGNATURE, set by bench/run.sh from
-- bench/signatures/sign.py) to every request. nginx's baseline proxies the same headers.
wrk.headers["Signature-Input"] = os.getenv("SIGNATURE_INPUT")
wrk.headers["Signature"] = os.getenv("SIGNATURE")
