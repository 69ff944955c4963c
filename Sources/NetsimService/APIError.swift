/// A request the API refuses, with the status and message Toxiproxy would send. It reaches the
/// client as ``ErrorJSON`` (`{"error": message, "status": status}`).
public struct APIError: Error, Equatable, Sendable, CustomStringConvertible {
    public var status: Int
    public var message: String
    public init(_ status: Int, _ message: String) {
        self.status = status
        self.message = message
    }
    public var description: String { "\(status): \(message)" }

    static func badRequest(_ message: String) -> APIError { APIError(400, message) }
}
