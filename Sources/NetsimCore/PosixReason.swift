import Foundation

public extension Error {
    /// The operating system's reason (`No such file or directory`) when Foundation wraps one,
    /// otherwise the error's own description.
    var posixReason: String {
        let error = self as NSError
        if error.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(error.code))) }
        if let underlying = error.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        // swift-corelibs-foundation often gives no underlying error: "The operation could not
        // be completed. The file doesn't exist." (QA 61) is ENOENT.
        if error.domain == NSCocoaErrorDomain {
            switch CocoaError.Code(rawValue: error.code) {
            case .fileNoSuchFile, .fileReadNoSuchFile: return String(cString: strerror(ENOENT))
            case .fileReadNoPermission, .fileWriteNoPermission: return String(cString: strerror(EACCES))
            default: break
            }
        }
        return error.localizedDescription
    }
}
