/// The HTTP version a request was sent with, as the relay saw it on the wire: typed, so that
/// reports and checks never parse a request line again (HTTP/2 joins with TLS interception).
public struct HTTPWireVersion: Hashable, Sendable, CustomStringConvertible {
    public var major: Int
    public var minor: Int

    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    public static let http1_0 = HTTPWireVersion(major: 1, minor: 0)
    public static let http1_1 = HTTPWireVersion(major: 1, minor: 1)
    public static let http2 = HTTPWireVersion(major: 2, minor: 0)

    /// `HTTP/1.1`, `HTTP/2`.
    public var description: String { minor == 0 && major >= 2 ? "HTTP/\(major)" : "HTTP/\(major).\(minor)" }
}
