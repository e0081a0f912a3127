import Foundation
import OAuth

@testable import JOSE

/// RFC example files and the JOSE Cookbook.
enum RFCRunner {
    static let all = Set(JWSAlgorithm.allCases)

    static func jwsExamples(_ json: [String: Any]) -> FileResult {
        var r = FileResult()
        for t in json["tests"] as? [[String: Any]] ?? [] {
            let id = t["id"] as? String ?? "?"
            let expected = Expectation(t["expected"] as? String)
            let keys = (t["keys"] as? [[String: Any]] ?? []).map { try? JWK(json: jsonText($0)) }
            let payloadB64 = t["payload_b64u"] as? String ?? ""
            var ok = true
            let sigs = t["signatures"] as? [[String: Any]] ?? []
            if sigs.isEmpty { ok = false }
            for (n, s) in sigs.enumerated() {
                // Compact, or the same three parts taken out of a JSON serialization (only when
                // the whole header is protected: a compact-only verifier has nothing else).
                let token: String
                if t["serialization"] as? String == "compact", let c = t["jws"] as? String {
                    token = c
                } else {
                    // A JSON serialization's signature covers only the protected header and
                    // the payload: the same three parts make the compact form a compact-only
                    // verifier checks (an unprotected header is not signed either way).
                    token =
                        "\(s["protected_b64u"] as? String ?? "").\(payloadB64).\(s["signature_b64u"] as? String ?? "")"
                }
                guard let index = s["key_index"] as? Int, index < keys.count, let key = keys[index],
                    let jws = try? CompactJWS(token)
                else {
                    ok = false
                    continue
                }
                if (try? JWSVerifier.verify(jws, embeddedKey: key, algorithms: all)) == nil { ok = false }
                if s["reproducible"] as? Bool == true, let alg = JWSAlgorithm(rawValue: s["alg"] as? String ?? ""),
                    let input = s["signing_input"] as? String
                {
                    let produced = (try? key.sign(alg, message: Array(input.utf8))).map(Base64URL.encode)
                    r.record(
                        "\(id)/signature[\(n)] reproduced", expected: .valid,
                        got: produced == s["signature_b64u"] as? String)
                }
            }
            r.record(id, expected: expected, got: ok)
        }
        return r
    }

    static func thumbprints(_ json: [String: Any]) -> FileResult {
        var r = FileResult()
        for t in json["tests"] as? [[String: Any]] ?? [] {
            let key = (t["jwk"] as? [String: Any]).flatMap { try? JWK(json: jsonText($0)) }
            r.record(
                t["id"] as? String ?? "?", expected: .valid, got: key?.thumbprint() == t["thumbprint_b64u"] as? String)
        }
        return r
    }

    static func pkce(_ json: [String: Any]) -> FileResult {
        var r = FileResult()
        for t in json["tests"] as? [[String: Any]] ?? [] {
            let v = t["code_verifier"] as? String ?? ""
            r.record(
                t["id"] as? String ?? "?", expected: .valid,
                got: PKCE.challenge(for: v) == t["code_challenge"] as? String)
        }
        return r
    }

    static func dpop(_ json: [String: Any]) -> FileResult {
        var r = FileResult()
        for p in json["proofs"] as? [[String: Any]] ?? [] {
            var ok = false
            if let jwt = p["dpop_jwt"] as? String, let jws = try? CompactJWS(jwt),
                let k = jws.header.object["jwk"]?.object, let key = try? JWK(object: k)
            {
                ok =
                    (try? JWSVerifier.verify(jws, embeddedKey: key, algorithms: all)) != nil
                    && key.thumbprint() == p["jwk_thumbprint"] as? String
            }
            r.record("proof \(p["id"] ?? "?")", expected: .valid, got: ok)
        }
        for a in json["ath_examples"] as? [[String: Any]] ?? [] {
            let token = a["access_token"] as? String ?? ""
            r.record(
                "ath \(a["id"] ?? "?")", expected: .valid,
                got: Base64URL.encode(Digest.sha256.hash(Array(token.utf8))) == a["ath"] as? String)
        }
        for a in json["access_token_examples"] as? [[String: Any]] ?? [] {
            // Signing keys are not published: parse and read the binding only.
            let jws = (a["jwt"] as? String).flatMap { try? CompactJWS($0) }
            let jkt = (try? jws?.claims())??["cnf"]?.object?["jkt"]?.string
            let want = ((a["claims"] as? [String: Any])?["cnf"] as? [String: Any])?["jkt"] as? String
            r.record("access token \(a["id"] ?? "?")", expected: .valid, got: jkt != nil && jkt == want)
        }
        for c in json["validation_cases"] as? [[String: Any]] ?? [] {
            let req = c["request"] as? [String: Any] ?? [:]
            let request = DPoPProofVerifier.Request(
                method: req["method"] as? String ?? "", uri: req["url"] as? String ?? "",
                accessToken: req["access_token"] as? String,
                now: Int64(req["now"] as? Int ?? 0))
            var ok = false
            if let proof = try? DPoPProofVerifier().verify(c["dpop_jwt"] as? String ?? "", request: request) {
                ok = (req["expected_jkt"] as? String).map { $0 == proof.jkt } ?? true
            }
            r.record("case \(c["id"] ?? "?")", expected: Expectation(c["expected"] as? String), got: ok)
        }
        return r
    }

    static func cookbook(_ json: [String: Any]) -> FileResult {
        var r = FileResult()
        let input = json["input"] as? [String: Any] ?? [:]
        let keys = (input["key"] as? [[String: Any]]) ?? [(input["key"] as? [String: Any]) ?? [:]]
        let algs = (input["alg"] as? [String]) ?? [(input["alg"] as? String) ?? ""]
        let steps = (json["signing"] as? [[String: Any]]) ?? [(json["signing"] as? [String: Any]) ?? [:]]
        let title = json["title"] as? String ?? "cookbook"
        for (n, step) in steps.enumerated() where n < keys.count && n < algs.count {
            let key = try? JWK(json: jsonText(keys[n]))
            let alg = JWSAlgorithm(rawValue: algs[n])
            let input = Array((step["sig-input"] as? String ?? "").utf8)
            let sig = Base64URL.decode(step["sig"] as? String ?? "") ?? []
            var ok = false
            if let key, let alg { ok = (try? key.verify(alg, message: input, signature: sig)) ?? false }
            r.record("\(title) signature \(n)", expected: .valid, got: ok)
            if json["reproducible"] as? Bool == true, let key, let alg {
                r.record(
                    "\(title) signature \(n) reproduced", expected: .valid,
                    got: (try? key.sign(alg, message: input)) == sig)
            }
        }
        if let compact = (json["output"] as? [String: Any])?["compact"] as? String,
            let key = keys.first.flatMap({ try? JWK(json: jsonText($0)) })
        {
            let ok =
                (try? CompactJWS(compact)).map {
                    (try? JWSVerifier.verify($0, embeddedKey: key, algorithms: all)) != nil
                } ?? false
            r.record("\(title) compact", expected: .valid, got: ok)
        }
        return r
    }
}
