import Foundation

/// Runs a ``NetsimClient`` as a scenario's driver: turns the run's requests into
/// ``NetsimRequest``s and what the client returned or threw into what the judge reads.
final class InProcessDriver: ClientDriver {
    let name: String
    private let client: any NetsimClient
    private let notes = ClientLog()

    init(name: String, client: any NetsimClient) {
        self.name = name
        self.client = client
    }

    func perform(_ request: DriverRequest) async throws -> DriverResponse {
        guard let url = URL(string: request.url) else {
            throw RunnerError.failed("the run produced a URL Foundation cannot read: \(request.url)")
        }
        let asked = NetsimRequest(
            id: request.id, method: request.method, url: url, headers: request.headers, body: request.body.map { Array($0.utf8) })
        do {
            let answer = try await client.perform(asked)
            return .completed(status: answer.status, headers: answer.headers, body: answer.body, localPort: answer.localPort)
        } catch {
            // The library's own words, as a failure report shows them.
            let message = String(describing: error)
            let kind = ClientErrorKind.of(error)
            notes.note("#\(request.id) \(request.method) \(url.path): \(kind.rawValue): \(message)")
            return .failed(kind, message)
        }
    }

    /// An in-process client is ready once it exists.
    func ready(timeout: Duration) async throws {}

    func shutdown() async { await client.shutdown() }

    var log: String { get async { notes.contents } }
}
