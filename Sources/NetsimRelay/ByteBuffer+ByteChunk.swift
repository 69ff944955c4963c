import NIOCore
import NetsimFaults

/// The relay's chunks are the buffers NIO read: slicing shares their storage.
extension ByteBuffer: ByteChunk {
    public init(bytes: [UInt8]) { self.init(bytes: bytes[...]) }
    public var count: Int { readableBytes }
    public func slice(_ range: Range<Int>) -> ByteBuffer { getSlice(at: readerIndex + range.lowerBound, length: range.count)! }
    public var bytes: [UInt8] { Array(readableBytesView) }
}
