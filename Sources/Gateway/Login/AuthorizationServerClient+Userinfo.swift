import Foundation
import JOSE
import OAuth
import Reactor

/// The userinfo endpoint (OIDC Core §5.3): a GET with the access token — `Bearer` (RFC 6750
/// §2.1), or `DPoP` with a proof whose `ath` binds it to the token (RFC 9449 §7.1) when the
/// client gets DPoP-bound tokens. A resource server's `use_dpop_nonce` challenge (§9) is
/// answered once with the nonce it gave.
extension AuthorizationServerClient {
    /// Userinfo answers are small; a larger one is refused before it is parsed (a hostile or
    /// broken AS cannot make the gateway hold megabytes per login).
    static let maxUserinfoBytes = 64 << 10

    /// Why userinfo gave no claims; the text is for the log only.
    enum UserinfoFailure: Error, Equatable, CustomStringConvertible {
        /// The AS could not be asked (network, 5xx, no endpoint): not a refusal.
        case unreachable(String)
        /// The AS answered, and not with usable claims (4xx, not JSON, too large, too many).
        case refused(String)

        /// Stable: logs and tests match on it.
        var code: String {
            switch self {
            case .unreachable: "userinfo_unreachable"
            case .refused: "userinfo_refused"
            }
        }

        var description: String {
            switch self {
            case .unreachable(let why), .refused(let why): why
            }
        }
    }

    func userinfo(
        _ endpoint: String, accessToken: String, to t: Target, retried: Bool = false,
        done: @escaping (Result<JSONObject, UserinfoFailure>) -> Void
    ) {
        var headers = ["Accept: application/json"]
        if let dpop = t.dpop {
            do {
                let proof = try dpop.proof(
                    method: "GET", url: endpoint, accessToken: accessToken, nonce: dpopNonces[endpoint],
                    now: self.wallClock.seconds)
                headers += ["Authorization: DPoP " + accessToken, "DPoP: " + proof]
            } catch {
                done(.failure(.refused("DPoP proof: \(error)")))
                return
            }
        } else {
            headers.append("Authorization: Bearer " + accessToken)
        }
        let request = FetchRequest(
            url: endpoint, headers: headers, bound: CallBounds.userinfo, maxResponseBytes: Self.maxUserinfoBytes)
        fetcher(t).fetch(request) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let e):
                // Over the size cap is the AS's answer, not a failure to reach it.
                let why = "userinfo endpoint: \(e.description)"
                done(.failure(e.kind == .responseTooLarge ? .refused(why) : .unreachable(why)))
            case .success(let resp):
                if t.dpop != nil, let nonce = resp.header("dpop-nonce") {
                    self.dpopNonces[endpoint] = nonce
                    if !retried, resp.status == 401, resp.header("www-authenticate")?.contains("use_dpop_nonce") == true
                    {
                        self.userinfo(endpoint, accessToken: accessToken, to: t, retried: true, done: done)
                        return
                    }
                }
                done(Self.parseUserinfo(resp))
            }
        }
    }

    /// §5.3.2: a 200 with a JSON object. A signed or encrypted answer (`application/jwt`) is not
    /// accepted: the gateway asks for JSON, and the TLS channel to the AS authenticates it.
    static func parseUserinfo(_ resp: FetchResponse) -> Result<JSONObject, UserinfoFailure> {
        guard resp.status == 200 else {
            let why = "userinfo endpoint answered \(resp.status)"
            return .failure(resp.status >= 500 ? .unreachable(why) : .refused(why))
        }
        let type = resp.header("content-type")?.lowercased() ?? ""
        guard type.hasPrefix("application/json") else {
            return .failure(
                .refused(
                    "userinfo endpoint answered \(type.isEmpty ? "no content type" : type), not application/json"))
        }
        do {
            return .success(try JSONParser.parseObject(resp.body, what: "userinfo response"))
        } catch {
            return .failure(.refused("userinfo response is not a JSON object: \(error)"))
        }
    }
}
