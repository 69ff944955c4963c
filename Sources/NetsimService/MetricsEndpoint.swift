/// Serves only `GET /metrics` from a ``MetricsRegistry``: what `netsim relay --metrics ADDR`
/// exposes (run it with ``APIServer``). Read-only, so no token: but still loopback unless a
/// person asks otherwise, as every netsim listener.
public final class MetricsEndpoint: APIResponder {
    public let registry: MetricsRegistry

    public init(registry: MetricsRegistry) { self.registry = registry }

    public func handle(_ request: APIRequest) async -> APIResponse {
        let path = request.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? "/"
        guard path == "/metrics" else { return .error(APIError(404, "not found: \(path) (only /metrics is served here)")) }
        guard request.method == "GET" else {
            return .error(APIError(405, "method \(request.method) not allowed on /metrics"))
        }
        return APIResponse(status: 200, contentType: MetricsRegistry.contentType, body: Array(registry.exposition().utf8))
    }

    public func shutdown() async {}
}
