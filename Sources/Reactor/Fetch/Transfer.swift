internal import CCurl
internal import CShim
import Glibc

/// One curl easy transfer: owns the easy handle, its header list and the request body
/// (curl reads them for as long as the handle lives), collects the response.
final class Transfer {
    private let request: FetchRequest
    private let completion: (Result<FetchResponse, FetchError>) -> Void
    private var easy: UnsafeMutableRawPointer?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var body: [UInt8] = []
    private var responseHeaders: [(name: String, value: String)] = []
    private var tooLarge = false
    private var postData: UnsafeMutableBufferPointer<UInt8>?

    init(request: FetchRequest, completion: @escaping (Result<FetchResponse, FetchError>) -> Void) {
        self.request = request
        self.completion = completion
    }

    deinit {
        if let easy { curl_easy_cleanup(easy) }
        if let headerList { curl_slist_free_all(headerList) }
        postData?.deallocate()
    }

    /// Sets every option, checking each (a failed option is an error, never ignored).
    func configure(settings: FetchSettings) throws -> UnsafeMutableRawPointer {
        // Whatever built it (a token from an AS, a file, metadata), nothing that could end a
        // line early reaches libcurl: a CR or LF in a header would split the request in two
        // on a kept connection (RFC 9112 §2.2), a NUL would cut it short.
        guard FieldSyntax.isRequestURL(request.url) else {
            throw FetchError(.refusedRequest, description: "the URL holds a space, a control or a non-ASCII byte")
        }
        for h in request.headers where !FieldSyntax.isFieldLine(h) {
            let name = h.prefix { $0 != ":" && $0.isASCII && !$0.isWhitespace }.prefix(40)
            throw FetchError(
                .refusedRequest, description: "the header \(name) is not a field line (RFC 9110 §5.5: no CR, LF or NUL)"
            )
        }
        guard let easy = curl_easy_init() else { throw FetchError(description: "curl_easy_init failed") }
        self.easy = easy
        func check(_ rc: CURLcode, _ what: String) throws {
            if rc != CURLE_OK {
                throw FetchError(description: "curl option \(what): \(String(cString: curl_easy_strerror(rc)))")
            }
        }
        try check(tg_curl_easy_setopt_ptr(easy, CURLOPT_URL, request.url), "URL")
        // Only http(s), also after redirects; bounded redirects; no signals (threads).
        try check(tg_curl_easy_setopt_ptr(easy, CURLOPT_PROTOCOLS_STR, "http,https"), "PROTOCOLS_STR")
        try check(tg_curl_easy_setopt_ptr(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"), "REDIR_PROTOCOLS_STR")
        try check(
            tg_curl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, settings.maxRedirects > 0 ? 1 : 0), "FOLLOWLOCATION")
        try check(tg_curl_easy_setopt_long(easy, CURLOPT_MAXREDIRS, settings.maxRedirects), "MAXREDIRS")
        try check(tg_curl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1), "NOSIGNAL")
        try check(tg_curl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(request.timeout * 1000)), "TIMEOUT_MS")
        try check(
            tg_curl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, Int(request.connectTimeout * 1000)),
            "CONNECTTIMEOUT_MS")
        try check(
            tg_curl_easy_setopt_off_t(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(request.maxResponseBytes)),
            "MAXFILESIZE")
        try check(
            tg_curl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, settings.insecureSkipTLSVerify ? 0 : 1),
            "SSL_VERIFYPEER")
        try check(
            tg_curl_easy_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, settings.insecureSkipTLSVerify ? 0 : 2),
            "SSL_VERIFYHOST")
        if let ca = settings.caFile { try check(tg_curl_easy_setopt_ptr(easy, CURLOPT_CAINFO, ca), "CAINFO") }
        if let pair = settings.clientCertificate {
            try check(tg_curl_easy_setopt_ptr(easy, CURLOPT_SSLCERT, pair.certFile), "SSLCERT")
            try check(tg_curl_easy_setopt_ptr(easy, CURLOPT_SSLKEY, pair.keyFile), "SSLKEY")
        }
        if settings.addresses != .any {
            try check(
                tg_curl_easy_public_addresses_only(easy, settings.addresses == .publicOrLoopback ? 1 : 0),
                "OPENSOCKETFUNCTION")
        }
        try check(tg_curl_easy_setopt_ptr(easy, CURLOPT_USERAGENT, "tokengate"), "USERAGENT")
        try check(tg_curl_easy_setopt_ptr(easy, CURLOPT_ACCEPT_ENCODING, ""), "ACCEPT_ENCODING")
        for h in request.headers {
            guard let list = curl_slist_append(headerList, h) else {
                throw FetchError(description: "curl_slist_append failed")
            }
            headerList = list
        }
        if let headerList { try check(tg_curl_easy_setopt_ptr(easy, CURLOPT_HTTPHEADER, headerList), "HTTPHEADER") }
        if let payload = request.body {
            // curl does not copy POSTFIELDS: the buffer lives as long as this transfer.
            let buf = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(payload.count, 1))
            _ = buf.initialize(from: payload)
            postData = buf
            try check(
                tg_curl_easy_setopt_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(payload.count)), "POSTFIELDSIZE"
            )
            try check(tg_curl_easy_setopt_ptr(easy, CURLOPT_POSTFIELDS, buf.baseAddress), "POSTFIELDS")
        }
        // curl copies the string (only POSTFIELDS it does not).
        if let method = request.method {
            try check(tg_curl_easy_setopt_ptr(easy, CURLOPT_CUSTOMREQUEST, method), "CUSTOMREQUEST")
        }
        // Unretained: the fetcher's table holds this transfer while curl may call back.
        let me = Unmanaged.passUnretained(self).toOpaque()
        try check(tg_curl_easy_set_write_function(easy, writeThunk, me), "WRITEFUNCTION")
        try check(tg_curl_easy_set_header_function(easy, headerThunk, me), "HEADERFUNCTION")
        return easy
    }

    fileprivate func write(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        if body.count + count > request.maxResponseBytes {
            tooLarge = true
            return 0  // makes curl fail the transfer with CURLE_WRITE_ERROR
        }
        data.withMemoryRebound(to: UInt8.self, capacity: count) {
            body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
        }
        return count
    }

    fileprivate func header(_ data: UnsafeMutablePointer<CChar>, _ count: Int) -> Int {
        let line = data.withMemoryRebound(to: UInt8.self, capacity: count) {
            String(decoding: UnsafeBufferPointer(start: $0, count: count), as: UTF8.self)
        }
        if line.hasPrefix("HTTP/") {
            responseHeaders.removeAll()  // a new response (after a redirect or 100-continue)
        } else if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: " \t\r\n")
            responseHeaders.append((name, value))
        }
        return count
    }

    func finish(result: CURLcode) {
        guard let easy else { return }
        if result != CURLE_OK {
            let error =
                tooLarge || result == CURLE_FILESIZE_EXCEEDED
                ? FetchError(.responseTooLarge, description: "response larger than \(request.maxResponseBytes) bytes")
                : FetchError(description: String(cString: curl_easy_strerror(result)))
            completion(.failure(error))
            return
        }
        var status = 0
        tg_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        completion(.success(FetchResponse(status: status, headers: responseHeaders, body: body)))
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = self
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}

private func writeThunk(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ n: Int, _ userp: UnsafeMutableRawPointer?)
    -> Int
{
    Unmanaged<Transfer>.fromOpaque(userp!).takeUnretainedValue().write(data!, size * n)
}

private func headerThunk(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ n: Int, _ userp: UnsafeMutableRawPointer?)
    -> Int
{
    Unmanaged<Transfer>.fromOpaque(userp!).takeUnretainedValue().header(data!, size * n)
}

extension FetchSettings.AddressPolicy {
    /// Whether a connection to the IP address `text` (dotted IPv4 or IPv6) would be made under
    /// this policy: the check curl's socket callback makes (tg_address_is_public).
    public func admits(_ text: String) -> Bool {
        if self == .any { return true }
        let loopback: Int32 = self == .publicOrLoopback ? 1 : 0
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, text, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            return withUnsafePointer(to: &v4) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { tg_address_is_public($0, loopback) == 1 }
            }
        }
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET6, text, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            return withUnsafePointer(to: &v6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { tg_address_is_public($0, loopback) == 1 }
            }
        }
        return false
    }
}
