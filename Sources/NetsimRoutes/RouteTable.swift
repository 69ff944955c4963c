/// Chooses the route that answers a request: exact path (query string ignored), method (nil
/// matches any), first match wins; then the connectivity probes an open network answers
/// (``ConnectivityProbes``); nothing matching gets a 404.
///
/// Pure and immutable, so the handler that records a request and the one that answers it can each
/// consult it and always agree on the status.
public struct RouteTable: Sendable {
    public let routes: [HTTPRoute]

    public init(routes: [HTTPRoute]) { self.routes = routes }

    /// The route for a request, or a 404 route naming what was asked for.
    public func route(method: String, target: String) -> HTTPRoute {
        let path = RouteTable.path(of: target)
        let method = method.uppercased()
        if let match = routes.first(where: { $0.path == path && ($0.method == nil || $0.method!.uppercased() == method) }) {
            return match
        }
        if let probe = ConnectivityProbes.routes.first(where: { $0.path == path }) { return probe }
        return HTTPRoute(
            path: path, status: 404, headers: [HTTPHeader("Content-Type", "text/plain; charset=utf-8")],
            body: .text("netsim: no route for \(method) \(path)\n"))
    }

    /// The path of a request target: origin-form (`/feed?x=1`) or absolute-form
    /// (`http://host/feed?x=1`, as sent to proxies), without query string or fragment.
    public static func path(of target: String) -> String {
        var rest = Substring(target)
        if let schemeEnd = rest.range(of: "://"), rest[..<schemeEnd.lowerBound].allSatisfy({ $0.isLetter }) {
            rest = rest[schemeEnd.upperBound...]
            rest = rest.firstIndex(of: "/").map { rest[$0...] } ?? "/"
        }
        if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        return rest.isEmpty ? "/" : String(rest)
    }
}
