"""kiln report's page in a real browser: Debian's headless Chromium loads the
page written from a traced run, its DOM holds the function table's rows,
the timeline and the graph pictures (SVG), and a screenshot of it is not
blank.

usage: report_in_chromium.py TRACED_PROGRAM KILN_TOOL
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib


def png_pixels(path):
    """The RGB(A) rows of an 8-bit PNG, unfiltered (PNG's five row filters)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, idat, header = 8, b"", None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    width, height, depth, color = header[:4]
    assert depth == 8 and color in (2, 6), f"unexpected PNG format: depth {depth}, color type {color}"
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + left) & 255
            elif kind == 2:
                line[x] = (line[x] + up) & 255
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 255
            elif kind == 4:
                estimate = left + up - corner
                pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def chromium(*arguments):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser, "Debian's chromium is not installed (apt-get install chromium)"
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def main():
    program, tool = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as work:
        trace = os.path.join(work, "trace")
        environment = dict(os.environ, KILN_TRACE=trace, KILN_CACHE="off")
        subprocess.run([program], env=environment, check=True, capture_output=True)
        page = os.path.join(work, "report.html")
        subprocess.run([tool, "report", trace, "-o", page], check=True)
        url = "file://" + page

        dom = chromium("--dump-dom", url).stdout
        rows = re.findall(r'<tr class="function-row[^"]*">', dom)
        assert len(rows) == 3, f"expected 3 function rows in the DOM, found {len(rows)}"
        for name in ("softmax_layer", "churn", "hot"):
            assert f"<code>{name}</code>" in dom, f"{name} is not in the DOM"
        assert '<svg id="timeline"' in dom, "no timeline SVG in the DOM"
        pictures = dom.count('class="picture"><svg')
        assert pictures >= 3, f"expected a picture per graph, found {pictures}"
        assert 'class="compile-row storm"' in dom, "the storm's compiles are not highlighted"

        shot = os.path.join(work, "report.png")
        chromium(f"--screenshot={shot}", "--window-size=1280,1400", url)
        width, height, channels, pixels = png_pixels(shot)
        background = pixels[0][:channels]
        differing = sum(
            1 for row in pixels for x in range(0, width * channels, channels) if row[x:x + channels] != background)
        share = differing / (width * height)
        assert share > 0.02, f"the screenshot is blank: {share:.4f} of its pixels differ from the background"
        print(f"report in chromium ok: {len(rows)} function rows, {pictures} graph pictures, "
              f"{share:.1%} of the screenshot drawn")


if __name__ == "__main__":
    main()
