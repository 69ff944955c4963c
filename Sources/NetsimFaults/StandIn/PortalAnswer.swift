import Foundation

/// What a captive portal answers to one plain-HTTP request (``FaultKind/portal(_:)``).
///
/// Every request is intercepted, as on a real portal network: the well-known connectivity
/// probes are recognised only to say so in the event log — a real portal answers them like
/// anything else, and that is exactly how operating systems detect it.
struct PortalAnswer {
    /// Its summary reads e.g. `302 → http://portal.netsim.test/login?…`.
    var response: StandInResponse
    /// `Apple's captive-portal probe`, when the request is one.
    var probe: String?

    init(_ request: HTTPRequestSummary, settings: PortalSettings, now: Date) {
        let target = PortalAnswer.target(of: request)
        probe = PortalAnswer.probe(host: target.host, path: target.path)
        var status = (200, "OK")
        var extra: [(String, String)] = []
        let body: String
        let summary: String
        if target.host == PortalSettings.loginHost {
            body = request.method == "POST" ? PortalPages.loginAccepted : PortalPages.login
            summary = "200 and the portal's \(request.method == "POST" ? "form-accepted" : "login") page"
        } else if settings.answer == .page {
            body = PortalPages.login
            summary = "200 and the login page"
        } else {
            let location = "http://\(PortalSettings.loginHost)/login?continue=\(PortalAnswer.percentEncoded(target.url))"
            status = (302, "Found")
            extra = [("Location", location)]
            body = "<html><body><a href=\"\(location)\">Sign in to Guest Wi-Fi</a></body></html>\n"
            summary = "302 → \(location)"
        }
        let headers = [("Date", httpDate(now)), ("Server", "netsim-portal")] + extra + [("Content-Type", "text/html; charset=utf-8")]
        response = StandInResponse(status: status.0, reason: status.1, headers: headers, body: body, summary: summary)
    }

    /// The host (lower case, no port) and path the request is for: from an absolute-form target
    /// (a forward proxy's request) or the Host header.
    /// `url` is the URL asked for, scheme, port and query included, for the redirect's `continue=`.
    static func target(of request: HTTPRequestSummary) -> (host: String, path: String, url: String) {
        var uri = Substring(request.uri)
        var authority = request.header("Host") ?? ""
        var scheme = request.scheme
        if let separator = uri.range(of: "://") {
            scheme = uri[..<separator.lowerBound].lowercased()
            let rest = uri[separator.upperBound...]
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            authority = String(rest[..<slash])
            uri = slash == rest.endIndex ? "/" : rest[slash...]
        }
        var host = authority
        if let colon = host.lastIndex(of: ":"), !host.hasSuffix("]") { host = String(host[..<colon]) }
        let path = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
        let url = "\(scheme)://\(authority.isEmpty ? "unknown" : authority.lowercased())\(uri.isEmpty ? "/" : String(uri))"
        return (host.lowercased(), path.isEmpty ? "/" : path, url)
    }

    /// The connectivity probes operating systems and browsers send to detect a portal, and what
    /// they expect from an open network.
    static let probes: [(name: String, hosts: Set<String>, paths: Set<String>, openAnswer: String)] = [
        ("Apple's captive-portal probe", ["captive.apple.com", "www.apple.com", "www.appleiphonecell.com"],
         ["/hotspot-detect.html", "/library/test/success.html"], "200 with a page titled Success"),
        ("Android/Chromium's connectivity check", ["connectivitycheck.gstatic.com", "connectivitycheck.android.com", "clients3.google.com", "clients1.google.com", "www.google.com"],
         ["/generate_204", "/gen_204"], "204 No Content"),
        ("Firefox's captive-portal probe", ["detectportal.firefox.com"], ["/canonical.html", "/success.txt"], "200 with `success`"),
        ("Windows' network connectivity probe (NCSI)", ["www.msftconnecttest.com", "www.msftncsi.com"],
         ["/connecttest.txt", "/ncsi.txt", "/redirect"], "200 with `Microsoft Connect Test`"),
    ]

    static func probe(host: String, path: String) -> String? {
        probes.first { $0.hosts.contains(host) && $0.paths.contains(path) }.map { "\($0.name) (an open network answers \($0.openAnswer))" }
    }

    private static func percentEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
