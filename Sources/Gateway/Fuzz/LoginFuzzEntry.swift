import JOSE
import OAuth

/// Entry points for fuzzing what a browser sends to the gateway's login side (the libFuzzer
/// target `LoginFuzz` in `fuzz/` and the corpus replay test call these): Cookie headers
/// (`Cookies`, `CookieFilter`), the sealed session cookie, whole or in chunks
/// (`CookieSessionStore`, `SessionEncoding`), the login start's `rd` and the callback's
/// query as the worker reads them; and API keys (a presented key, the key fields, the key file). They return normally on every input; a failed
/// `fuzzInvariant` is a finding.
public enum LoginFuzzEntry {
    /// The first byte's two low bits choose the input's kind (0xF0 and up: API keys,
    /// LoginFuzzEntry+APIKeys); the rest is its bytes.
    public static func all(_ data: [UInt8]) {
        guard let first = data.first else { return }
        let rest = Array(data.dropFirst())
        if first >= 0xF0 {
            apiKeys(rest, kind: first)
            return
        }
        switch first & 3 {
        case 0: cookieHeaders(String(decoding: rest, as: UTF8.self))
        case 1: sessionCookie(rest)
        case 2: loginStart(query: String(decoding: rest, as: UTF8.self), allowList: first & 4 != 0)
        default: callback(query: String(decoding: rest, as: UTF8.self), issRequired: first & 4 != 0)
        }
    }

    /// The origin the fuzzed requests come to.
    static let origin = RequestOrigin.Origin(scheme: "https", authority: "gw.example.com")

    /// The login start (`LoginStartStage`): its query's first `rd`, through
    /// `DecisionLogin.returnTarget`, is a target `OAuthFuzzEntry.checkReturnTarget` accepts —
    /// with no allowed host a same-origin path.
    public static func loginStart(query: String, allowList: Bool) {
        let policy = allowList ? ReturnTo(allowedHosts: OAuthFuzzEntry.allowedReturnHosts) : ReturnTo()
        let rd = FormEncoding.decode(Substring(query))?.first { $0.0 == "rd" }?.1
        let target = DecisionLogin.returnTarget(rd, origin: origin, policy: policy)
        OAuthFuzzEntry.checkReturnTarget(target, allowedHosts: policy.allowedHosts, allowHTTP: policy.allowHTTP)
        if let rd { OAuthFuzzEntry.returnTo(rd) }
    }

    /// The callback (`LoginService.callback`): the `state` it looks the pending login up by
    /// (the first) is the one the accepted response carries, and the response is decided as
    /// `OAuthFuzzEntry.authorizationResponse` checks.
    public static func callback(query: String, issRequired: Bool) {
        let state = FormEncoding.decode(Substring(query))?.first { $0.0 == "state" }?.1
        let response = AuthorizationResponse.parse(
            query: Substring(query), expectedIssuer: OAuthFuzzEntry.expectedIssuer, issRequired: issRequired)
        switch response {
        case .success(.code(_, let s)): fuzzInvariant(s == state, "callback: the pending login is not the response's")
        case .success(.error(_, _, let s)):
            fuzzInvariant(s == nil || s == state, "callback: the pending login is not the response's")
        case .failure: break
        }
        OAuthFuzzEntry.authorizationResponse(Substring(query), issRequired: issRequired)
    }
}
