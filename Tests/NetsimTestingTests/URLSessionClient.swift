import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NetsimTesting

/// What a package's own client looks like to the library: URLSession, one session per run.
final class URLSessionClient: NetsimClient {
    private let session: URLSession

    init(timeout: Duration?) {
        let configuration = URLSessionConfiguration.ephemeral
        if let timeout { configuration.timeoutIntervalForRequest = Double(timeout.components.seconds) }
        session = URLSession(configuration: configuration)
    }

    func perform(_ request: NetsimRequest) async throws -> NetsimResponse {
        var asked = URLRequest(url: request.url)
        asked.httpMethod = request.method
        for header in request.headers { asked.addValue(header.value, forHTTPHeaderField: header.name) }
        asked.httpBody = request.body.map { Data($0) }
        let (data, response) = try await session.data(for: asked)
        let http = response as! HTTPURLResponse
        let headers = http.allHeaderFields.map { HTTPHeader("\($0.key)", "\($0.value)") }
        return NetsimResponse(status: http.statusCode, headers: headers, body: Array(data))
    }

    func shutdown() async { session.invalidateAndCancel() }
}
