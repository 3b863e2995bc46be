import CCurl
import Glibc
import SodiumKit

/// libcurl's process-wide setup. curl_global_init is not thread-safe, so it runs exactly
/// once, behind Swift's thread-safe static initialisation, before the first handle exists.
enum CurlGlobal {
    static let initResult: CURLcode = fs_curl_global_init(Int(CURL_GLOBAL_DEFAULT))

    static func ensureReady() throws(HTTPError) {
        if initResult != CURLE_OK {
            throw HTTPError.other(code: Int(initResult.rawValue), message: HTTPError.strerror(initResult))
        }
    }
}

/// Where a response body goes while it arrives.
protocol BodySink: AnyObject {
    /// Takes the next bytes; false (no memory) aborts the transfer.
    func take(_ bytes: UnsafeRawBufferPointer) -> Bool
}

/// A body in ordinary memory (discovery, key sets: nothing secret).
final class PlainBody: BodySink {
    var bytes: [UInt8] = []

    func take(_ bytes: UnsafeRawBufferPointer) -> Bool {
        self.bytes.append(contentsOf: bytes)
        return true
    }
}

/// A body received straight into secure memory (a token answer). It grows by doubling, each
/// step a fresh allocation, so every copy left behind is wiped as it is freed (sodium_free).
final class SecureBody: BodySink {
    private(set) var bytes: SecureBytes
    private let limit: Int

    init(limit: Int) throws(HTTPError) {
        self.limit = limit
        bytes = try SecureBody.allocate(min(limit, 4096))
    }

    func take(_ chunk: UnsafeRawBufferPointer) -> Bool {
        if bytes.append(contentsOf: chunk) { return true }
        // The transfer's cap was checked first, so `limit` always has room.
        let needed = bytes.count + chunk.count
        guard needed <= limit, let larger = try? bytes.grown(toCapacity: min(limit, max(bytes.capacity * 2, needed))) else {
            return false
        }
        bytes = larger
        return bytes.append(contentsOf: chunk)
    }

    private static func allocate(_ capacity: Int) throws(HTTPError) -> SecureBytes {
        do { return try SecureBytes(capacity: capacity) } catch {
            throw HTTPError.other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "no secure memory for the answer")
        }
    }
}

/// What the C callbacks fill in during one transfer. Passed to libcurl unretained; the
/// handle keeps it alive for the whole `perform`.
final class TransferState {
    let limit: Int
    let body: any BodySink
    var received = 0
    var headers: [String: String] = [:]
    var overflowed = false
    var outOfMemory = false

    init(limit: Int, body: any BodySink) {
        self.limit = limit
        self.body = body
    }

    /// Counts bytes against the cap; false means abort the transfer.
    func admit(_ count: Int) -> Bool {
        let (total, overflow) = received.addingReportingOverflow(count)
        guard !overflow, total <= limit else {
            overflowed = true
            return false
        }
        received = total
        return true
    }

    func addBody(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard body.take(UnsafeRawBufferPointer(bytes)) else {
            outOfMemory = true
            return false
        }
        return true
    }

    func addHeaderLine(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        // Trim CR LF as bytes: Swift treats "\r\n" as one Character.
        var end = bytes.count
        while end > 0, bytes[end - 1] == 13 || bytes[end - 1] == 10 { end -= 1 }
        let line = String(decoding: bytes[..<end], as: UTF8.self)
        // A status line starts a new response (interim 1xx, or a followed redirect):
        // only the final response's headers are reported.
        if line.hasPrefix("HTTP/") {
            headers = [:]
            return true
        }
        guard let colon = line.firstIndex(of: ":") else { return true }
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingSpaces()
        if let existing = headers[name] {
            headers[name] = existing + ", " + value
        } else {
            headers[name] = value
        }
        return true
    }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        var trimmed = drop(while: isBlank)
        while let last = trimmed.last, isBlank(last) { trimmed.removeLast() }
        return String(trimmed)
    }
}

/// Owns one libcurl easy handle plus everything libcurl points into while it works: the
/// header list, the POST body copy and the error buffer. All are freed in deinit; the header
/// list is wiped first (it may hold an Authorization header).
final class EasyHandle {
    private let handle: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private var postBody: UnsafeMutableRawBufferPointer?
    private let errorBuffer: UnsafeMutablePointer<CChar>

    init() throws(HTTPError) {
        try CurlGlobal.ensureReady()
        guard let handle = fs_curl_easy_init() else {
            throw HTTPError.other(code: Int(CURLE_FAILED_INIT.rawValue), message: "curl_easy_init failed")
        }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        // The handle goes first: libcurl may touch the list, body and buffer until cleanup.
        fs_curl_easy_cleanup(handle)
        fs_curl_slist_wipe_free_all(headerList)
        postBody?.deallocate()
        errorBuffer.deallocate()
    }

    func set(_ option: CURLoption, _ value: Int) throws(HTTPError) {
        try check(fs_curl_setopt_long(handle, option, value))
    }

    func set(_ option: CURLoption, offset value: Int64) throws(HTTPError) {
        try check(fs_curl_setopt_off(handle, option, curl_off_t(value)))
    }

    /// For string options; libcurl copies strings (except POSTFIELDS, handled separately).
    func set(_ option: CURLoption, _ value: String) throws(HTTPError) {
        guard !value.utf8.contains(0) else { throw HTTPError.invalidRequest("NUL byte in option value") }
        try check(fs_curl_setopt_ptr(handle, option, value))
    }

    /// `headers` first, then `secret` (whole lines in secure memory), in this order.
    func setHeaders(_ headers: [(name: String, value: String)], secret: [SecureBytes] = []) throws(HTTPError) {
        for (name, value) in headers {
            // Reject anything that could end the header line and inject another one.
            let line = name + ": " + value
            guard !name.isEmpty, !line.utf8.contains(where: { $0 == 0 || $0 == 10 || $0 == 13 }),
                  !name.contains(":") else {
                throw HTTPError.invalidRequest("invalid header \(name)")
            }
            try append(line)
        }
        for line in secret {
            // The same checks, on bytes (no String of a secret); the NUL-terminated copy that
            // libcurl reads is secure memory too, and so wiped.
            let valid = line.withUnsafeBytes { bytes in
                guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return false }
                return !bytes.contains(where: { $0 == 0 || $0 == 10 || $0 == 13 })
            }
            guard valid else { throw HTTPError.invalidRequest("invalid secret header") }
            let terminated: SecureBytes
            do { terminated = try SecureBytes(capacity: line.count + 1) } catch {
                throw HTTPError.other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "no secure memory for a header")
            }
            _ = line.withUnsafeBytes { terminated.append(contentsOf: $0) }
            terminated.append(0)
            let appended = terminated.withUnsafeBytes { bytes in
                bytes.baseAddress.flatMap { fs_curl_slist_append(headerList, $0.assumingMemoryBound(to: CChar.self)) }
            }
            guard let appended else {
                throw HTTPError.other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_slist_append failed")
            }
            headerList = appended
        }
        if let headerList { try check(fs_curl_setopt_ptr(handle, CURLOPT_HTTPHEADER, headerList)) }
    }

    private func append(_ line: UnsafePointer<CChar>) throws(HTTPError) {
        guard let appended = fs_curl_slist_append(headerList, line) else {
            throw HTTPError.other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "curl_slist_append failed")
        }
        headerList = appended
    }

    /// Copies `body` into memory this handle owns: libcurl reads POSTFIELDS by pointer
    /// during the transfer, which must outlive any Swift array's temporary buffer.
    func setPostBody(_ body: [UInt8]) throws(HTTPError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(body.count, 1), alignment: 1)
        postBody?.deallocate()
        postBody = buffer
        buffer.copyBytes(from: body)
        try check(fs_curl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
        try check(fs_curl_setopt_ptr(handle, CURLOPT_POSTFIELDS, buffer.baseAddress))
    }

    /// Runs the transfer with `body` as the POST body, read in place (no copy of ours):
    /// libcurl holds the pointer only within this call.
    func perform(posting body: SecureBytes, limit: Int, into sink: any BodySink) throws(HTTPError) -> (Int, [String: String]) {
        let result = body.withUnsafeBytes { bytes in
            Result { () throws(HTTPError) -> (Int, [String: String]) in
                // A non-NULL pointer even for an empty body: NULL would make libcurl read a callback.
                let start = bytes.baseAddress ?? UnsafeRawPointer(errorBuffer)
                try check(fs_curl_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count)))
                try check(fs_curl_setopt_ptr(handle, CURLOPT_POSTFIELDS, start))
                defer { _ = fs_curl_setopt_ptr(handle, CURLOPT_POSTFIELDS, nil) }
                return try perform(limit: limit, into: sink)
            }
        }
        return try result.get()
    }

    /// Runs the transfer on the calling thread; returns the status and the final response's
    /// headers when it ends, the body having gone to `sink`.
    func perform(limit: Int, into sink: any BodySink) throws(HTTPError) -> (Int, [String: String]) {
        let state = TransferState(limit: limit, body: sink)
        let context = Unmanaged.passUnretained(state).toOpaque()
        try check(fs_curl_setopt_write(handle, Self.onBody))
        try check(fs_curl_setopt_ptr(handle, CURLOPT_WRITEDATA, context))
        try check(fs_curl_setopt_header(handle, Self.onHeader))
        try check(fs_curl_setopt_ptr(handle, CURLOPT_HEADERDATA, context))
        try check(fs_curl_setopt_ptr(handle, CURLOPT_ERRORBUFFER, errorBuffer))
        errorBuffer[0] = 0

        let code = withExtendedLifetime(state) { fs_curl_easy_perform(handle) }
        // Unhook the callbacks' context: the state dies when this function returns.
        _ = fs_curl_setopt_ptr(handle, CURLOPT_WRITEDATA, nil)
        _ = fs_curl_setopt_ptr(handle, CURLOPT_HEADERDATA, nil)

        if state.overflowed || code == CURLE_FILESIZE_EXCEEDED { throw HTTPError.responseTooLarge(limit: limit) }
        if state.outOfMemory { throw HTTPError.other(code: Int(CURLE_OUT_OF_MEMORY.rawValue), message: "no memory for the answer") }
        guard code == CURLE_OK else { throw HTTPError.from(code, detail: String(cString: errorBuffer)) }
        var status = 0
        try check(fs_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status))
        return (status, state.headers)
    }

    private func check(_ code: CURLcode) throws(HTTPError) {
        guard code == CURLE_OK else { throw HTTPError.from(code, detail: "") }
    }

    // C trampolines: non-capturing, so they convert to C function pointers. Returning a
    // count other than the one given makes libcurl abort with CURLE_WRITE_ERROR.
    private static let onBody: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        data, size, count, context in
        receive(data, size, count, context) { state, bytes in state.addBody(bytes) }
    }

    private static let onHeader: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int = {
        data, size, count, context in
        receive(data, size, count, context) { state, bytes in state.addHeaderLine(bytes) }
    }

    /// What both callbacks do: check the size against the cap (headers count too: a server
    /// must not stream them forever), then hand the bytes over.
    private static func receive(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
                                _ context: UnsafeMutableRawPointer?,
                                _ deliver: (TransferState, UnsafeBufferPointer<UInt8>) -> Bool) -> Int {
        let (total, overflow) = size.multipliedReportingOverflow(by: count)
        guard !overflow, total > 0, let data, let context else { return 0 }
        let state = Unmanaged<TransferState>.fromOpaque(context).takeUnretainedValue()
        guard state.admit(total) else { return 0 }
        let taken = data.withMemoryRebound(to: UInt8.self, capacity: total) { deliver(state, UnsafeBufferPointer(start: $0, count: total)) }
        return taken ? total : 0
    }
}
