import DownloadCore
import Testing

@Suite struct ContentDispositionTests {
    func name(_ header: String) -> String? { ContentDisposition(header).filename }

    @Test func readsTheTypeAndAPlainOrQuotedFilename() {
        let parsed = ContentDisposition("Attachment; filename=report.pdf")
        #expect(parsed.type == "attachment")
        #expect(parsed.filename == "report.pdf")
        #expect(name(#"attachment; filename="annual report.pdf""#) == "annual report.pdf")
        #expect(name(#"attachment;filename="a \"quoted\" name.txt""#) == #"a "quoted" name.txt"#)
        #expect(name(#"attachment; FILENAME = "x.bin" "#) == "x.bin")
        #expect(name("inline") == nil)
        #expect(ContentDisposition("inline").type == "inline")
    }

    @Test func theExtendedFilenameWinsWhereverItStands() {
        #expect(name(#"attachment; filename="EURO rates"; filename*=utf-8''%e2%82%ac%20rates"#) == "€ rates")
        #expect(name(#"attachment; filename*=UTF-8''%e2%82%ac%20rates; filename="EURO rates""#) == "€ rates")
        #expect(name("attachment; filename*=iso-8859-1'en'%A3%20rates") == "£ rates")
        #expect(name("attachment; filename*=UTF-8'de'na%C3%AFve.txt") == "naïve.txt")
    }

    @Test func anUnreadableExtendedFilenameFallsBackToThePlainOne() {
        // Unknown charset, invalid UTF-8, bad percent-encoding, missing quotes.
        #expect(name("attachment; filename*=koi8-r''%F0; filename=plain.txt") == "plain.txt")
        #expect(name("attachment; filename*=UTF-8''%FF%FE; filename=plain.txt") == "plain.txt")
        #expect(name("attachment; filename*=UTF-8''%G1; filename=plain.txt") == "plain.txt")
        #expect(name("attachment; filename*=just-a-name; filename=plain.txt") == "plain.txt")
        #expect(name("attachment; filename*=UTF-8''%FF") == nil)
    }

    @Test func garbageNeverCrashesAndGivesWhatCanBeRead() {
        #expect(name("") == nil)
        #expect(name(";;;;") == nil)
        #expect(name("attachment; filename") == nil)
        #expect(name("attachment; filename=") == nil)
        #expect(name(#"attachment; filename="unterminated"#) == "unterminated")
        #expect(name(#"attachment; filename="a;b.txt"; size=3"#) == "a;b.txt")
        #expect(name("attachment; filename=first.txt; filename=second.txt") == "first.txt")
        #expect(name(#"attachment; foo="x; filename=inner.txt"; filename=outer.txt"#) == "outer.txt")
        #expect(name(#"attachment; filename="trailing\"#) == "trailing\\")
        #expect(name(String(repeating: "; filename", count: 10_000)) == nil)
        #expect(name("=\"\"\"\";=;=") == nil)
    }
}

@Suite struct FileNameTests {
    func isSafe(_ name: String) -> Bool {
        guard case .success(let parts) = DestinationPath.components(of: name) else { return false }
        return parts == [name]
    }

    @Test func aGoodNameIsKept() {
        for name in ["report.pdf", "annual report (final).pdf", "€ rates.csv", "日本語.txt", "a", "x.tar.gz"] {
            #expect(FileName.safe(name) == name)
        }
    }

    @Test func hostileNamesBecomeOneSafeSegment() {
        #expect(FileName.safe("../../etc/passwd") == "_.._etc_passwd")
        #expect(FileName.safe("..\\..\\boot.ini") == "_.._boot.ini")
        #expect(FileName.safe("/etc/passwd") == "_etc_passwd")
        #expect(FileName.safe(".bashrc") == "bashrc")
        #expect(FileName.safe(".fetchd-partial-01ABC") == "fetchd-partial-01ABC")
        #expect(FileName.safe("a\u{0}b\nc\u{7F}d") == "a_b_c_d")
        #expect(FileName.safe("evil\u{202E}fdp.exe") == "evil_fdp.exe")
        #expect(FileName.safe("  spaced . ") == "spaced")
        for empty in ["", ".", "..", "...", "   ", " . . "] {
            #expect(FileName.safe(empty) == "download", "\(empty)")
        }
        let hostile = [
            "../", "..", "/", "\\", "\u{0}", "a/../../b", "C:\\Windows\\x.dll", "\u{2028}", "\u{FEFF}.txt",
            ".fetchd-x", String(repeating: "é", count: 300) + ".txt", String(repeating: "/..", count: 100),
            "\u{1B}[31mred", "nul\u{0}.txt", "\u{85}next", "\u{E000}private",
        ]
        for name in hostile {
            let safe = FileName.safe(name)
            #expect(isSafe(safe), "\(name) -> \(safe)")
            #expect(!safe.hasPrefix("."), "\(name) -> \(safe)")
        }
    }

    @Test func aLongNameIsCutTo255BytesKeepingItsExtension() {
        let long = String(repeating: "é", count: 300) + ".tar.gz"
        let safe = FileName.safe(long)
        #expect(safe.utf8.count <= 255)
        #expect(safe.hasSuffix("é.tar.gz"))
        #expect(isSafe(safe))
        let noExtension = String(repeating: "x", count: 1000)
        #expect(FileName.safe(noExtension) == String(repeating: "x", count: 255))
    }

    @Test func theNameComesFromTheHeaderElseTheURLElseDownload() {
        #expect(FileName.choose(contentDisposition: #"attachment; filename="r.pdf""#, finalURL: "http://h/x/y.bin") == "r.pdf")
        #expect(FileName.choose(contentDisposition: "attachment", finalURL: "http://h/x/y%20z.bin?sig=1#top") == "y z.bin")
        #expect(FileName.choose(contentDisposition: "attachment; filename=\"..\"", finalURL: "http://h/dir/") == "dir")
        #expect(FileName.choose(contentDisposition: nil, finalURL: "http://h/") == "download")
        #expect(FileName.choose(contentDisposition: nil, finalURL: "http://h") == "download")
        #expect(FileName.choose(contentDisposition: nil, finalURL: "http://h/%2e%2e") == "download")
        #expect(FileName.choose(contentDisposition: nil, finalURL: "http://h/a%2Fb") == "a_b")
        #expect(FileName.choose(contentDisposition: nil, finalURL: "http://h/%FF.bin") == "%FF.bin")
        #expect(FileName.choose(contentDisposition: nil, finalURL: nil) == "download")
        #expect(FileName.choose(contentDisposition: "attachment; filename*=UTF-8''..%2F..%2Fx", finalURL: nil) == "_.._x")
    }

    @Test func renameCandidatesNumberTheStem() {
        #expect(FileName.renamed("report.pdf", number: 1) == "report (1).pdf")
        #expect(FileName.renamed("report.pdf", number: 12) == "report (12).pdf")
        #expect(FileName.renamed("data.tar.gz", number: 2) == "data (2).tar.gz")
        #expect(FileName.renamed("README", number: 1) == "README (1)")
        #expect(FileName.renamed(".profile", number: 1) == ".profile (1)")
        #expect(FileName.renamed("v1.2.3-linux", number: 1) == "v1.2 (1).3-linux")
        #expect(FileName.renamed("a.verylongextensionname", number: 1) == "a.verylongextensionname (1)")
        let long = String(repeating: "x", count: 255 - 4) + ".txt"
        let renamed = FileName.renamed(long, number: 100)
        #expect(renamed.utf8.count <= 255)
        #expect(renamed.hasSuffix(" (100).txt"))
        #expect(isSafe(renamed))
    }
}
