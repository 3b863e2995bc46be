// Makes every token request fingerseal makes (refresh, password grant, code exchange, device
// authorization and poll, revocation) with canary secrets, against a test token endpoint,
// lets every value of the exchange go, then searches its own memory for the canaries in the
// form only fingerseal's own code could have written them. Not part of the product.
//
//   secret-canary BASE_URL [--leak NAME] < input
//
// input: one "NAME HEX" line per canary, HEX being the value XOR 0x5A: the raw value never
// enters this process in ordinary memory (not in argv, not in the input buffer), so finding
// it means something here made an ordinary copy. NAMEs: client_secret, refresh_token,
// password, code, verifier (sent), device_code (answered, JSON-escaped, then sent with each
// poll), access_token_answer and refresh_token_answer (answered, JSON-escaped).
//
// The heap never reuses a block (CanaryHeap: free keeps it as it is), so every ordinary copy
// ever made of a canary is still there to find, unless its maker wiped it first; secure
// memory is unmapped when freed (sodium_free).
//
// What libcurl copies is in its own buffers, freed unwiped (README.md): there the secrets
// sent are percent-encoded and the answers still JSON-escaped, so each canary carries a
// character both encodings change ("/" or "+") and the raw value cannot be libcurl's.
// Prints "clean BYTES" and exits 0, or one "found NAME in REGION" line each and exits 1.
// --leak NAME keeps an ordinary copy of that canary during the search (the search's own
// check: it must then find it).
import CanaryHeap
import CurlKit
import FingersealCore
import Glibc
import IdentityClient
import SodiumKit

let mask: UInt8 = 0x5A

func fail(_ why: String) -> Never {
    let line = Array("secret-canary: \(why)\n".utf8)
    _ = write(2, line, line.count)
    exit(2)
}

func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
    default: return nil
    }
}

/// The input's canaries, still masked.
func readInput() -> [String: [UInt8]] {
    let input = readAll("-")
    var canaries: [String: [UInt8]] = [:]
    for line in input.split(separator: 0x0a) {
        let parts = line.split(separator: 0x20)
        guard parts.count == 2, parts[1].count % 2 == 0 else { fail("bad input line") }
        var masked: [UInt8] = []
        var index = parts[1].startIndex
        while index < parts[1].endIndex {
            guard let high = hexValue(parts[1][index]), let low = hexValue(parts[1][index + 1]) else { fail("bad hex") }
            masked.append(high << 4 | low)
            index += 2
        }
        canaries[String(decoding: parts[0], as: UTF8.self)] = masked
    }
    return canaries
}

/// A masked canary, unmasked straight into secure memory.
func secret(_ masked: [UInt8]?) -> SecureBytes {
    guard let masked, let value = try? SecureBytes(capacity: masked.count) else { fail("no canary") }
    for byte in masked { value.append(byte ^ mask) }
    return value
}

/// Every request, every answer checked; everything made here is gone when this returns.
func exchange(_ base: String, _ canaries: [String: [UInt8]]) {
    let metadata = ProviderMetadata(issuer: base, tokenEndpoint: base + "/token", authorizationEndpoint: base + "/authorize",
                                    deviceAuthorizationEndpoint: base + "/device", revocationEndpoint: base + "/revoke")
    let client = OAuthClient(metadata: metadata, clientID: "canary-client", clientSecret: secret(canaries["client_secret"]),
                             http: HTTPClient(configuration: .init(connectTimeout: 2, timeout: 10)))
    func answered(_ what: String, _ request: () throws(TokenFailure) -> TokenSet) {
        do {
            let tokens = try request()
            guard tokens.accessToken.count > 0, tokens.refreshToken != nil else { fail("\(what): no tokens") }
        } catch {
            fail("\(what): \(error)")
        }
    }
    answered("refresh") { () throws(TokenFailure) in try client.refresh(secret(canaries["refresh_token"])) }
    answered("password") { () throws(TokenFailure) in
        try client.passwordGrant(username: "alice", password: secret(canaries["password"]), scope: "openid")
    }
    answered("code") { () throws(TokenFailure) in
        try client.exchangeCode(secret(canaries["code"]), redirectURI: "http://127.0.0.1:1/callback",
                                verifier: secret(canaries["verifier"]))
    }
    answered("device") { () throws(TokenFailure) in
        // The poll sends the device code the endpoint answered.
        let authorization = try client.startDeviceAuthorization(scope: "openid")
        guard authorization.deviceCode.isEqual(to: secret(canaries["device_code"])) else { fail("device: another code") }
        return try client.pollDevice(authorization)
    }
    do {
        guard try client.revoke(secret(canaries["refresh_token"])) else { fail("revoke: no endpoint") }
    } catch {
        fail("revoke: \(error)")
    }
}

/// Where `masked` (unmasked) lies in this process's readable memory, by region.
func search(_ canaries: [String: [UInt8]]) -> (findings: [String], scanned: Int) {
    var regions: [(start: UInt64, end: UInt64, name: String)] = []
    for line in readAll("/proc/self/maps").split(separator: 0x0a) {
        let text = String(decoding: line, as: UTF8.self).split(separator: " ", omittingEmptySubsequences: true)
        guard text.count >= 5 else { continue }
        let bounds = text[0].split(separator: "-")
        let permissions = text[1]
        let name = text.count > 5 ? text[5...].joined(separator: " ") : ""
        // Readable, and writable or anonymous: where a process keeps what it makes.
        guard permissions.hasPrefix("r"), permissions.dropFirst().hasPrefix("w") || name.isEmpty || name.hasPrefix("["),
              !["[vvar]", "[vsyscall]", "[vdso]"].contains(name),
              bounds.count == 2, let start = UInt64(bounds[0], radix: 16), let end = UInt64(bounds[1], radix: 16) else { continue }
        regions.append((start, end, name))
    }
    let memory = open("/proc/self/mem", O_RDONLY)
    guard memory >= 0 else { fail("no /proc/self/mem") }
    defer { close(memory) }
    let longest = canaries.values.map(\.count).max() ?? 0
    let chunkSize = 1 << 20
    var buffer = [UInt8](repeating: 0, count: chunkSize + longest)
    var findings: [String] = []
    var scanned = 0
    for region in regions {
        var offset = region.start
        while offset < region.end {
            let count = Int(min(UInt64(buffer.count), region.end - offset))
            let got = buffer.withUnsafeMutableBytes { pread(memory, $0.baseAddress, count, off_t(Int64(bitPattern: offset))) }
            guard got > 0 else { break }
            scanned += got
            for (name, masked) in canaries where got >= masked.count {
                if contains(buffer, got, masked) { findings.append("found \(name) in \(region.name.isEmpty ? "anonymous" : region.name)") }
            }
            if got < count || offset + UInt64(got) >= region.end { break }
            // Overlap by the longest canary, so one across two chunks is seen.
            offset += UInt64(got - longest)
        }
    }
    return (Array(Set(findings)).sorted(), scanned)
}

/// Whether the first `count` bytes of `buffer` hold the unmasked `masked`, compared masked:
/// only its first byte is ever unmasked here.
func contains(_ buffer: [UInt8], _ count: Int, _ masked: [UInt8]) -> Bool {
    let first = Int32(masked[0] ^ mask)
    return buffer.withUnsafeBytes { bytes in
        guard let base = bytes.baseAddress else { return false }
        var position = 0
        while position + masked.count <= count {
            guard let hit = memchr(base + position, first, count - masked.count + 1 - position) else { return false }
            let at = base.distance(to: UnsafeRawPointer(hit))
            var matches = true
            for index in 1..<masked.count where bytes[at + index] ^ mask != masked[index] {
                matches = false
                break
            }
            if matches { return true }
            position = at + 1
        }
        return false
    }
}

/// A whole file (or stdin, for "-"), bounded only by what it holds.
func readAll(_ path: String) -> [UInt8] {
    let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { fail("cannot open \(path)") }
    defer { if fd != 0 { close(fd) } }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(fd, &chunk, chunk.count)
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { return bytes }
        bytes += chunk[..<count]
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 2 || (arguments.count == 4 && arguments[2] == "--leak") else {
    fail("usage: secret-canary BASE_URL [--leak NAME] < input")
}
let canaries = readInput()
exchange(arguments[1], canaries)
// Every library's free must have reached the heap that keeps blocks, or the search proves nothing.
guard canary_heap_releases() > 1000 else { fail("the heap that keeps freed blocks is not in use") }
let leaked = arguments.count == 4 ? (canaries[arguments[3]] ?? []).map { $0 ^ mask } : []
let (findings, scanned) = withExtendedLifetime(leaked) { search(canaries) }
if findings.isEmpty {
    print("clean \(scanned)")
    exit(0)
}
for finding in findings { print(finding) }
exit(1)
