import Foundation
import NetsimHTTP

/// How the `resilient` reference client notices a captive portal, the way operating systems do:
/// an answer that looks wrong for the request is checked with a connectivity probe before it is
/// believed.
///
/// Suspicious: a redirect to another host, `511 Network Authentication Required`, or an HTML page
/// for a request whose `Accept` does not take HTML. The probe is Android's
/// (`GET http://connectivitycheck.gstatic.com/generate_204`), sent on a fresh connection to the
/// same address — on a portal network every connection lands at the portal, so that is where a
/// real probe would land too. An open network answers `204`; anything else is a portal. A request
/// that is itself a well-known probe is judged by its own answer.
enum CaptivePortalCheck {
    static let probeHost = "connectivitycheck.gstatic.com"
    static let probeTarget = "/generate_204"

    /// Why the answer looks like a portal's, before probing; nil when it looks like a real answer.
    static func suspicion(_ response: RawResponse, url: PlainURL, requestHeaders: [HTTPHeader]) -> String? {
        if (300..<400).contains(response.status), let location = response.header("Location"),
           let target = URLComponents(string: location), let host = target.host, !host.isEmpty,
           host.lowercased() != url.host.lowercased() {
            return "redirected to \(location)"
        }
        if response.status == 511 { return "511 Network Authentication Required" }
        let accept = requestHeaders.first { $0.name.caseInsensitiveCompare("Accept") == .orderedSame }?.value.lowercased()
        if let accept, !accept.contains("html"), !accept.contains("*/*"),
           response.header("Content-Type")?.lowercased().contains("text/html") == true {
            return "an HTML page (\(response.status)) for a request that accepts \(accept)"
        }
        return nil
    }

    /// The request is itself a connectivity probe and its answer is not the open network's
    /// (``ConnectivityProbes``, which netsim's built-in server also answers).
    static func failedProbe(_ response: RawResponse, url: PlainURL) -> String? {
        let path = String(url.target.split(separator: "?", maxSplits: 1).first ?? "")
        guard let expected = ConnectivityProbes.routes.first(where: { $0.path == path }) else { return nil }
        let openBody: String = if case .text(let text) = expected.body { text } else { "" }
        let body = String(decoding: response.body, as: UTF8.self)
        if response.status != expected.status || body.trimmingCharacters(in: .whitespacesAndNewlines) != openBody.trimmingCharacters(in: .whitespacesAndNewlines) {
            return "captive portal: probe \(path) answered \(response.status) with unexpected content"
        }
        return nil
    }

    /// Probes from a fresh connection to `url`'s address; returns `captive portal: …` when the
    /// probe is not answered `204`, nil when the network is open (or the probe could not tell).
    static func confirm(_ suspicion: String, url: PlainURL, connectTimeout: Duration?, timeout: Duration?) async -> (verdict: String?, note: String) {
        var probe = url
        probe.host = probeHost
        probe.port = 80
        probe.target = probeTarget
        let probeURL = "http://\(probeHost)\(probeTarget)"
        let connection: ReferenceConnection
        do {
            connection = try await ReferenceConnection.connect(to: url, connectTimeout: connectTimeout ?? timeout)
        } catch {
            return (nil, "\(suspicion); the probe \(probeURL) could not connect (\(error.message)), so the answer is passed on")
        }
        defer { connection.close() }
        switch await connection.exchange(method: "GET", url: probe, headers: [], body: nil, timeout: timeout) {
        case .success(let answer) where answer.status == 204:
            return (nil, "\(suspicion), but the probe \(probeURL) answered 204: no portal")
        case .success(let answer):
            let verdict = "captive portal: \(suspicion); the probe \(probeURL) answered \(answer.status) instead of 204"
            return (verdict, verdict)
        case .failure(let failure):
            return (nil, "\(suspicion); the probe \(probeURL) failed (\(failure.message)), so the answer is passed on")
        }
    }
}
