
/// Reads the server name (SNI) from the start of a TLS ClientHello, for the event log: "broke
/// a TLS ClientHello for api.example.com". Never throws; anything unexpected gives nil.
enum TLSClientHello {
    static func serverName(in bytes: [UInt8]) -> String? {
        var b = ByteReader(bytes[...])
        // Record header: type 22 (handshake), version, length.
        guard b.readUInt8() == 0x16, b.readUInt16() != nil,
              b.readUInt16() != nil,
              // Handshake header: type 1 (ClientHello), 24-bit length; then version and random.
              b.readUInt8() == 0x01, b.readSlice(length: 3 + 2 + 32) != nil,
              let sessionLength = b.readUInt8(), b.readSlice(length: Int(sessionLength)) != nil,
              let suitesLength = b.readUInt16(), b.readSlice(length: Int(suitesLength)) != nil,
              let compressionLength = b.readUInt8(), b.readSlice(length: Int(compressionLength)) != nil,
              let extensionsLength = b.readUInt16(),
              var extensions = b.readSlice(length: min(Int(extensionsLength), b.remaining))
        else { return nil }
        while let type = extensions.readUInt16(), let length = extensions.readUInt16(),
              var body = extensions.readSlice(length: Int(length)) {
            guard type == 0 else { continue }  // server_name
            guard body.readUInt16() != nil else { return nil }
            while let nameType = body.readUInt8(), let nameLength = body.readUInt16(),
                  let name = body.readString(length: Int(nameLength)) {
                if nameType == 0 { return name.allSatisfy({ $0.isASCII && !$0.isWhitespace }) ? name : nil }
            }
            return nil
        }
        return nil
    }
}

/// Reads big-endian integers and slices from bytes, as TLS records are laid out.
struct ByteReader {
    private var bytes: ArraySlice<UInt8>
    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    var remaining: Int { bytes.count }

    mutating func readUInt8() -> UInt8? { bytes.popFirst() }

    mutating func readUInt16() -> UInt16? {
        guard let high = readUInt8(), let low = readUInt8() else { return nil }
        return UInt16(high) << 8 | UInt16(low)
    }

    mutating func readSlice(length: Int) -> ByteReader? {
        guard length >= 0, length <= bytes.count else { return nil }
        defer { bytes = bytes.dropFirst(length) }
        return ByteReader(bytes.prefix(length))
    }

    mutating func readString(length: Int) -> String? {
        readSlice(length: length).map { String(decoding: $0.bytes, as: UTF8.self) }
    }
}
