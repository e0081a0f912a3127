import Foundation
import OAuth
import Testing

@testable import JOSE

/// Runs every vector file by its format (never by tcId or id, so the same runner runs the
/// reviewer's held-back half). Per file it prints "ran N, met M". Policy decisions that
/// differ from an upstream label are described in Fixtures/README.md ("How tokengate runs
/// these") and applied here by rule, not by case.
@Suite("Third-party vectors")
struct VectorRunnerTests {
    @Test func everyVectorFileMeetsItsExpectedResults() {
        let files = VectorFiles.all()
        #expect(files.count >= 33, "fixtures missing: \(files.count)")
        var totalRan = 0
        var totalMet = 0
        for file in files {
            guard let json = file.json else {
                Issue.record("\(file.name): \(file.loadError ?? "unreadable")")
                continue
            }
            guard let result = Self.run(json) else {
                Issue.record("\(file.name): unknown vector format")
                continue
            }
            print(
                "\(file.name): ran \(result.ran), met \(result.met)\(result.byPolicy > 0 ? " (\(result.byPolicy) by tokengate policy)" : "")"
            )
            totalRan += result.ran
            totalMet += result.met
            #expect(result.ran > 0, "\(file.name): no cases")
            #expect(result.misses.isEmpty, "\(file.name):\n\(result.misses.prefix(20).joined(separator: "\n"))")
        }
        print("all vector files: ran \(totalRan), met \(totalMet)")
    }

    static func run(_ json: [String: Any]) -> FileResult? {
        let schema = json["schema"] as? String ?? ""
        if schema.hasPrefix("ecdsa_p1363_verify") { return WycheproofRunner.signatures(json, alg: ecdsaAlg(json)) }
        if schema.hasPrefix("rsassa_pkcs1_verify") { return WycheproofRunner.signatures(json, alg: nil) }
        if schema.hasPrefix("rsassa_pss_verify") { return WycheproofRunner.signatures(json, alg: nil) }
        if schema.hasPrefix("eddsa_verify") { return WycheproofRunner.signatures(json, alg: .EdDSA) }
        if schema.hasPrefix("mac_test") { return WycheproofRunner.hmac(json) }
        if schema.hasPrefix("json_web_signature") { return WycheproofRunner.jws(json, keySet: false) }
        if schema.hasPrefix("json_web_key") { return WycheproofRunner.jws(json, keySet: true) }
        if schema.hasPrefix("rfc_jws_examples") { return RFCRunner.jwsExamples(json) }
        if schema.hasPrefix("rfc_jwk_thumbprints") { return RFCRunner.thumbprints(json) }
        if schema.hasPrefix("rfc9449_dpop") { return RFCRunner.dpop(json) }
        if schema.hasPrefix("rfc7636_pkce") { return RFCRunner.pkce(json) }
        if json["input"] != nil, json["signing"] != nil { return RFCRunner.cookbook(json) }
        return nil
    }

    static func ecdsaAlg(_ json: [String: Any]) -> JWSAlgorithm? {
        switch (json["testGroups"] as? [[String: Any]])?.first?["sha"] as? String {
        case "SHA-256": .ES256
        case "SHA-384": .ES384
        case "SHA-512": .ES512
        default: nil
        }
    }
}
