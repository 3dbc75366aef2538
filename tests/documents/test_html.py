from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from threadkeep.documents import read_document

PAGE = """<!DOCTYPE html>
<html lang="zh-CN">
<head>
  <meta charset="utf-8">
  <title>帮助中心 - 云枢同步</title>
  <meta name="updated" content="2026-01-05T10:00:00+08:00">
  <style>h2 { color: red }</style>
  <script>document.write("<h2>脚本标题</h2>");</script>
</head>
<body>
  <nav><a href="/">首页</a><h2>站点导航</h2></nav>
  <h1>常见问题</h1>
  <p>遇到问题时<b>先看这里</b>。<br>仍无法解决请联系客服。</p>
  <h2>客户端与托盘</h2>
  <h3>点击托盘图标没有反应</h3>
  <ol>
    <li>结束进程
      <ul><li>YunshuSync.exe</li><li><p>YunshuSyncUI.exe</p></li></ul>
    </li>
    <li><p>清理缓存</p></li>
  </ol>
  <pre><code class="language-bat">taskkill /IM YunshuSync.exe /F
rem 清理缓存

del /Q "%LOCALAPPDATA%\\YunshuSync\\cache\\*"</code></pre>
  <h2>错误码</h2>
  <table>
    <caption>常见错误码</caption>
    <thead><tr><th>代码</th><th>含义</th></tr></thead>
    <tbody>
      <tr><td>E1024</td><td>登录已过期</td></tr>
      <tr><td>0x80070005</td><td>拒绝访问 | 权限不足</td></tr>
    </tbody>
  </table>
  <!-- 内部备注 -->
  <footer><div>版权所有</div></footer>
</body>
</html>
"""


def read(tmp_path: Path, html: str, name: str = "faq.html"):
    path = tmp_path / name
    path.write_text(html, encoding="utf-8")
    return read_document(path, tmp_path)


def test_heading_hierarchy_and_title(tmp_path: Path) -> None:
    document = read(tmp_path, PAGE)
    assert document.id == "faq.html"
    assert document.title == "常见问题"
    assert [section.heading_path for section in document.sections] == [
        ("常见问题",),
        ("常见问题", "客户端与托盘", "点击托盘图标没有反应"),
        ("常见问题", "错误码"),
    ]


def test_scripts_styles_navigation_and_comments_are_dropped(tmp_path: Path) -> None:
    text = "\n".join(section.text for section in read(tmp_path, PAGE).sections)
    for unwanted in ("脚本标题", "站点导航", "首页", "color", "内部备注"):
        assert unwanted not in text


def test_inline_markup_and_line_breaks(tmp_path: Path) -> None:
    intro = read(tmp_path, PAGE).sections[0]
    assert intro.text == "遇到问题时先看这里。\n仍无法解决请联系客服。"


def test_lists_keep_markers_and_nesting(tmp_path: Path) -> None:
    tray = read(tmp_path, PAGE).sections[1]
    assert tray.text.startswith("1. 结束进程\n  - YunshuSync.exe\n  - YunshuSyncUI.exe\n2. 清理缓存")


def test_pre_becomes_a_fenced_block_with_whitespace_kept(tmp_path: Path) -> None:
    tray = read(tmp_path, PAGE).sections[1]
    assert "```bat\ntaskkill /IM YunshuSync.exe /F\nrem 清理缓存\n\ndel /Q" in tray.text
    assert tray.text.endswith('\\cache\\*"\n```')


def test_tables_become_pipe_tables(tmp_path: Path) -> None:
    codes = read(tmp_path, PAGE).sections[2]
    assert codes.text.startswith(
        "常见错误码\n| 代码 | 含义 |\n| --- | --- |\n| E1024 | 登录已过期 |\n| 0x80070005 | 拒绝访问 \\| 权限不足 |"
    )


def test_meta_date_is_used_as_utc(tmp_path: Path) -> None:
    assert read(tmp_path, PAGE).updated_at == datetime(2026, 1, 5, 2, 0, tzinfo=UTC)


def test_title_element_when_there_is_no_h1(tmp_path: Path) -> None:
    document = read(
        tmp_path, "<html><head><title>发布说明</title></head><body><h2>新功能</h2><p>选择性同步。</p></body></html>"
    )
    assert document.title == "发布说明"
    assert document.sections[0].heading_path == ("发布说明", "新功能")


def test_legacy_gbk_page_with_meta_charset(tmp_path: Path) -> None:
    path = tmp_path / "old.htm"
    html = '<html><head><meta http-equiv="Content-Type" content="text/html; charset=gbk"></head>'
    html += "<body><h1>旧版帮助</h1><p>请重新登录。</p></body></html>"
    path.write_bytes(html.encode("gbk"))
    document = read_document(path)
    assert document.title == "旧版帮助"
    assert document.sections[0].text == "请重新登录。"


def test_empty_file_is_an_empty_document(tmp_path: Path) -> None:
    document = read(tmp_path, "", name="empty.html")
    assert document.title == "empty"
    assert document.sections == ()


def test_declared_big5_charset_is_honoured(tmp_path: Path) -> None:
    path = tmp_path / "tw.html"
    html = '<html><head><meta charset="big5"></head><body><h1>雲樞同步說明</h1><p>請重新登入。</p></body></html>'
    path.write_bytes(html.encode("big5"))
    document = read_document(path)
    assert document.title == "雲樞同步說明"
    assert document.sections[0].text == "請重新登入。"
