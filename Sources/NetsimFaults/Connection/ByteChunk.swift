/// Bytes as the connection machine carries them. The relay's chunks are NIO's `ByteBuffer`;
/// tests use `[UInt8]`. The machine only counts and slices; faults that must look inside
/// (a TLS ClientHello, the end of a response head) copy what they look at.
public protocol ByteChunk: Sendable {
    /// A chunk holding these bytes (a fault's own answer, garbage).
    init(bytes: [UInt8])
    var count: Int { get }
    /// The bytes in `range` (offsets from the chunk's start), without copying where possible.
    func slice(_ range: Range<Int>) -> Self
    /// A copy of the bytes.
    var bytes: [UInt8] { get }
}

extension Array: ByteChunk where Element == UInt8 {
    public init(bytes: [UInt8]) { self = bytes }
    public func slice(_ range: Range<Int>) -> [UInt8] { Array(self[range]) }
    public var bytes: [UInt8] { self }
}
