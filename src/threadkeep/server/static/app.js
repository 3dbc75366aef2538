// threadkeep web page: asks /api/ask (or searches /api/search) and lays out what the server computed.
// Whether there is an answer, what is cited and each citation's state come from the server; this file
// only lays them out, in the browser's language (the server's English label is kept as a tooltip).
"use strict";

const STRINGS = {
  en: {
    placeholder: "Ask a question, e.g. how do I fix error 0x80070005?",
    searchPlaceholder: "Search passages, e.g. 0x80070005",
    ask: "Ask",
    search: "Search",
    modeLabel: "Mode",
    modeAsk: "Ask",
    modeSearch: "Search",
    searching: "Looking in the knowledge base…",
    documents: "Documents",
    chat: "Chat discussions",
    noDocuments: "Nothing in the documents.",
    noChat: "Nothing in the chats.",
    noAnswerTitle: "No answer in the knowledge base",
    nearestTitle: "The closest passages (not an answer)",
    notAnAnswer: "Not an answer",
    generatedTitle: "Answer (worded by a model from the sources below)",
    compare: "Documents and chat are shown separately, each with its date: check which is more recent.",
    updated: "updated",
    resolved: "Resolved",
    workaround: "Unconfirmed",
    open: "Open: no conclusion",
    assistant: "Assistant session",
    explain: {
      resolved: "Someone confirmed the fix worked.",
      workaround: "Suggested; unconfirmed: nobody reported whether it worked.",
      open: "Reported, no conclusion at the time.",
      assistant: "From an assistant session: nobody else confirmed it.",
    },
    started: "started",
    note: "Note",
    showThread: "Show the whole discussion",
    hideThread: "Hide the discussion",
    loadingThread: "Loading the discussion…",
    cited: "cited",
    citedCount: (n, total) => `${n} of ${total} messages cited`,
    context: "around the discussion",
    recalled: "(recalled)",
    media: { image: "[image]", video: "[video]", voice: "[voice message]", file: "[file]", link: "[link]" },
    stats: (s) =>
      `${plural(s.conversations, "conversation", "conversations")} · ${plural(s.messages, "message", "messages")} · ` +
      `${plural(s.documents, "document", "documents")}`,
    messagesCount: (n) => plural(n, "message", "messages"),
    hitsCount: (n) => plural(n, "passage", "passages"),
    noHits: "No passages match.",
    examplesTitle: "Try asking",
    conversationsTitle: "Conversations",
    documentsTitle: "Documents",
    empty: (where) => `The knowledge base at ${where} is empty. Add data with: threadkeep ingest PATH`,
    kinds: { group: "group chat", direct: "direct chat", assistant: "assistant session" },
    apiDocs: "HTTP API",
    tokenLabel: "This server needs a token",
    tokenSave: "Use token",
    error: "Error",
  },
  zh: {
    placeholder: "输入问题，例如：装客户端报 0x80070005 怎么办",
    searchPlaceholder: "搜索原文，例如：0x80070005",
    ask: "提问",
    search: "搜索",
    modeLabel: "模式",
    modeAsk: "提问",
    modeSearch: "搜索",
    searching: "正在知识库中查找…",
    documents: "文档",
    chat: "聊天讨论",
    noDocuments: "文档中没有相关内容。",
    noChat: "聊天记录中没有相关讨论。",
    noAnswerTitle: "知识库中没有找到答案",
    nearestTitle: "最接近的内容（不是答案）",
    notAnAnswer: "不是答案",
    generatedTitle: "回答（由模型根据下列来源组织语言）",
    compare: "文档与聊天分开列出并各自标注日期，请留意哪一方更新。",
    updated: "更新于",
    resolved: "已解决",
    workaround: "未确认",
    open: "未解决：当时没有结论",
    assistant: "助手会话",
    explain: {
      resolved: "有人确认这个办法有效。",
      workaround: "有人提出了办法，但没有人反馈是否有效。",
      open: "有人提出了问题，当时没有结论。",
      assistant: "来自与 AI 助手的会话，没有其他人确认。",
    },
    started: "开始于",
    note: "注意",
    showThread: "查看完整对话",
    hideThread: "收起对话",
    loadingThread: "正在加载对话…",
    cited: "引用",
    citedCount: (n, total) => `共 ${total} 条消息，引用 ${n} 条`,
    context: "讨论前后的消息",
    recalled: "（已撤回）",
    media: { image: "[图片]", video: "[视频]", voice: "[语音]", file: "[文件]", link: "[链接]" },
    stats: (s) => `${s.conversations} 个会话 · ${s.messages} 条消息 · ${s.documents} 篇文档`,
    messagesCount: (n) => `${n} 条消息`,
    hitsCount: (n) => `${n} 条结果`,
    noHits: "没有匹配的内容。",
    examplesTitle: "可以这样问",
    conversationsTitle: "会话",
    documentsTitle: "文档",
    empty: (where) => `知识库（${where}）是空的。先导入数据：threadkeep ingest 路径`,
    kinds: { group: "群聊", direct: "私聊", assistant: "助手会话" },
    apiDocs: "HTTP 接口",
    tokenLabel: "此服务器需要访问令牌",
    tokenSave: "使用令牌",
    error: "出错了",
  },
};

function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

function pickLanguage() {
  const forced = new URLSearchParams(location.search).get("lang");
  const wanted = forced ? [forced] : navigator.languages || [navigator.language || "en"];
  for (const tag of wanted) {
    const base = String(tag).toLowerCase().split("-")[0];
    if (STRINGS[base]) return base;
  }
  return "en";
}

const LANG = pickLanguage();
const T = STRINGS[LANG];
const TRANSCRIPT_LINE = /^\[(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2})\] ([^:]+): (.*)$/;
const THREAD_CONTEXT = 3; // messages shown before and after a discussion

function $(selector, root = document) {
  return root.querySelector(selector);
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function day(iso) {
  return iso ? iso.slice(0, 10) : "";
}

function clock(iso) {
  return iso ? iso.slice(11, 16) : "";
}

function mode() {
  return $("#mode-search").checked ? "search" : "ask";
}

function translatePage() {
  document.documentElement.lang = LANG === "zh" ? "zh-CN" : "en";
  for (const node of document.querySelectorAll("[data-i18n]")) {
    const value = T[node.dataset.i18n];
    if (typeof value === "string") node.textContent = value;
  }
  for (const node of document.querySelectorAll("[data-i18n-label]")) {
    node.setAttribute("aria-label", T[node.dataset.i18nLabel]);
  }
  showMode();
}

function showMode() {
  const searching = mode() === "search";
  $("#q").placeholder = searching ? T.searchPlaceholder : T.placeholder;
  $("#ask-button").textContent = searching ? T.search : T.ask;
}

// ---- API ---------------------------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(path, body) {
  const headers = { Accept: "application/json" };
  const token = sessionStorage.getItem("threadkeep-token");
  if (token) headers.Authorization = `Bearer ${token}`;
  const init = { headers };
  if (body !== undefined) {
    init.method = "POST";
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    if (response.status === 401) $("#token-form").hidden = false;
    throw new ApiError(response.status, (data && data.error) || `HTTP ${response.status}`);
  }
  return data;
}

// ---- Markdown (document sections): built as DOM nodes, never as HTML strings -------------------

function inline(text) {
  const fragment = document.createDocumentFragment();
  const pattern = /(`[^`]+`|\*\*[^*]+\*\*)/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) fragment.append(text.slice(last, match.index));
    const token = match[0];
    fragment.append(token.startsWith("`") ? el("code", null, token.slice(1, -1)) : el("strong", null, token.slice(2, -2)));
    last = match.index + token.length;
  }
  if (last < text.length) fragment.append(text.slice(last));
  return fragment;
}

function markdownNode(text) {
  const root = el("div", "excerpt markdown");
  let list = null;
  let table = null;
  let code = null;
  for (const raw of text.split("\n")) {
    const line = raw.replace(/\s+$/, "");
    if (code) {
      if (line.startsWith("```")) code = null;
      else code.textContent += (code.textContent ? "\n" : "") + line;
      continue;
    }
    if (line.startsWith("```")) {
      code = el("code");
      root.appendChild(el("pre")).append(code);
      list = table = null;
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const ordered = /^\s*(\d+)[.)]\s+(.*)$/.exec(line);
    const bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
    if (/^\|.*\|$/.test(line)) {
      list = null;
      if (/^\|[\s:|-]+\|$/.test(line)) continue; // the header separator row
      if (!table) table = root.appendChild(el("table"));
      const row = table.appendChild(el("tr"));
      for (const cell of line.slice(1, -1).split("|")) {
        const td = row.appendChild(el("td"));
        td.append(inline(cell.trim()));
      }
      continue;
    }
    table = null;
    if (heading) {
      list = null;
      const node = el(`h${Math.min(6, heading[1].length + 2)}`, "md-heading");
      node.append(inline(heading[2]));
      root.append(node);
    } else if (ordered || bullet) {
      const tag = ordered ? "ol" : "ul";
      if (!list || list.tagName.toLowerCase() !== tag) {
        list = root.appendChild(el(tag));
        if (ordered && ordered[1] !== "1") list.start = Number(ordered[1]);
      }
      const item = list.appendChild(el("li"));
      item.append(inline(ordered ? ordered[2] : bullet[1]));
    } else if (line.trim()) {
      list = null;
      const paragraph = root.appendChild(el("p"));
      paragraph.append(inline(line.trim()));
    } else {
      list = null;
    }
  }
  return root;
}

// ---- chat lines ----------------------------------------------------------------------------------

function chatLinesNode(text, className = "excerpt chat-excerpt") {
  const lines = text.split("\n").filter((line) => line.trim());
  const days = new Set(lines.map((line) => (TRANSCRIPT_LINE.exec(line) || [])[1]).filter(Boolean));
  const list = el("div", className);
  let lastDay = "";
  for (const line of lines) {
    const match = TRANSCRIPT_LINE.exec(line);
    const row = el("div", "line");
    if (match) {
      // A discussion that crosses midnight shows the date where it changes, not only the time.
      const when = days.size > 1 && match[1] !== lastDay ? `${match[1]} ${match[2]}` : match[2];
      lastDay = match[1];
      row.append(el("span", "when", when), el("span", "who", match[3]), el("span", "what", match[4]));
    } else {
      row.append(el("span", "what", line));
    }
    list.append(row);
  }
  return list;
}

// ---- citations and hits ----------------------------------------------------------------------------

function badge(state) {
  const span = el("span", `badge badge-${state}`, T[state] || state);
  span.dataset.state = state;
  return span;
}

function headingOf(item) {
  if (item.source_type === "document") return (item.heading_path || [item.title]).join(" › ");
  return item.title || item.source_ref;
}

function dateNode(item, iso) {
  const date = el("time", "date");
  date.dateTime = iso;
  if (item.source_type === "document") {
    date.textContent = `${T.updated} ${day(iso)}`;
  } else {
    const start = day(item.started_at);
    date.textContent = start && start !== day(iso) ? `${start} → ${day(iso)}` : day(iso);
  }
  return date;
}

function isNearest(citation) {
  return /^Not an answer/.test(citation.label || "");
}

function citationNode(citation) {
  const item = el("li", `citation ${citation.source_type}`);
  item.dataset.chunkId = citation.chunk_id;
  const nearest = isNearest(citation);
  if (nearest) item.classList.add("not-answer");

  // Title and date once: the server's label says the same in English and stays as the tooltip.
  const head = el("div", "citation-head");
  if (nearest) head.append(el("span", "badge badge-not-answer", T.notAnAnswer));
  head.append(el("span", "title", headingOf(citation)));
  const assistant = citation.source_type === "chat" && !citation.resolution_state;
  if (citation.source_type === "chat" && citation.resolution_state && !nearest) head.append(badge(citation.resolution_state));
  head.append(dateNode(citation, citation.date));
  item.append(head);
  item.title = citation.label || "";

  if (nearest) {
    item.append(el("p", "label", citation.label));
  } else if (citation.source_type === "chat") {
    const state = assistant ? "assistant" : citation.resolution_state;
    item.append(el("p", "label", T.explain[state] || citation.label));
  }
  item.append(citation.source_type === "document" ? markdownNode(citation.excerpt) : chatLinesNode(citation.excerpt));

  for (const note of citation.notes || []) {
    const p = el("p", "note");
    p.append(el("strong", null, `${T.note}: `), document.createTextNode(note));
    item.append(p);
  }
  if (citation.source_type === "chat") item.append(...threadToggle(citation.chunk_id, citation.excerpt));
  return item;
}

function hitNode(hit) {
  const item = el("li", `citation hit ${hit.source_type}`);
  item.dataset.chunkId = hit.chunk_id;
  const head = el("div", "citation-head");
  head.append(el("span", "title", headingOf(hit)));
  if (hit.source_type === "chat" && hit.resolution_state) head.append(badge(hit.resolution_state));
  head.append(dateNode(hit, hit.occurred_at));
  item.append(head);
  if (hit.source_type === "document") {
    // The chunk text opens with its heading path, already shown as the title.
    const body = hit.text.includes("\n\n") ? hit.text.slice(hit.text.indexOf("\n\n") + 2) : hit.text;
    item.append(markdownNode(body));
  } else {
    item.append(chatLinesNode(hit.text));
    item.append(...threadToggle(hit.chunk_id, ""));
  }
  return item;
}

function threadToggle(chunkId, excerpt) {
  const button = el("button", "expand", T.showThread);
  button.type = "button";
  button.setAttribute("aria-expanded", "false");
  const panel = el("div", "thread");
  panel.hidden = true;
  button.addEventListener("click", () => toggleThread(chunkId, excerpt, button, panel));
  return [button, panel];
}

async function toggleThread(chunkId, excerpt, button, panel) {
  const open = button.getAttribute("aria-expanded") === "true";
  if (open) {
    panel.hidden = true;
    button.setAttribute("aria-expanded", "false");
    button.textContent = T.showThread;
    return;
  }
  button.setAttribute("aria-expanded", "true");
  button.textContent = T.hideThread;
  panel.hidden = false;
  if (panel.dataset.loaded) return;
  panel.replaceChildren(el("p", "muted small", T.loadingThread));
  try {
    const view = await api(`/api/thread?chunk_id=${encodeURIComponent(chunkId)}&context=${THREAD_CONTEXT}`);
    panel.replaceChildren(transcriptNode(view, excerpt));
    panel.dataset.loaded = "1";
  } catch (error) {
    panel.replaceChildren(el("p", "error", `${T.error}: ${error.message}`));
  }
}

// The messages the excerpt quotes: same minute, same speaker, and the quoted text (maybe shortened).
function quotedIds(view, excerpt) {
  const quoted = [];
  for (const line of excerpt.split("\n")) {
    const match = TRANSCRIPT_LINE.exec(line);
    if (match) quoted.push({ day: match[1], time: match[2], who: match[3], text: match[4].replace(/…$/, "") });
  }
  const ids = new Set();
  for (const message of view.messages) {
    const who = message.sender_name || message.sender;
    const found = quoted.find(
      (q) => q.day === day(message.sent_at) && q.time === clock(message.sent_at) && q.who === who &&
        message.text.startsWith(q.text),
    );
    if (found) ids.add(message.id);
  }
  return ids;
}

function transcriptNode(view, excerpt) {
  const wrap = el("div", "transcript-wrap");
  const quoted = excerpt ? quotedIds(view, excerpt) : new Set();
  const isCited = (message) => (quoted.size ? quoted.has(message.id) : message.cited);
  const cited = view.messages.filter(isCited).length;
  const inThread = view.messages.filter((m) => m.in_thread !== false).length;
  wrap.append(el("p", "muted small", T.citedCount(cited, inThread)));
  const list = el("ol", "transcript");
  let lastDay = "";
  for (const message of view.messages) {
    const classes = ["message"];
    if (isCited(message)) classes.push("cited");
    if (message.in_thread === false) classes.push("context");
    const item = el("li", classes.join(" "));
    item.dataset.messageId = message.id;
    const meta = el("div", "meta");
    const when = el("time", "when");
    when.dateTime = message.sent_at;
    const thisDay = day(message.sent_at);
    when.textContent = thisDay !== lastDay ? `${thisDay} ${clock(message.sent_at)}` : clock(message.sent_at);
    lastDay = thisDay;
    meta.append(when, el("span", "who", message.sender_name || message.sender));
    if (isCited(message)) meta.append(el("span", "cited-mark", T.cited));
    if (message.in_thread === false) meta.append(el("span", "context-mark", T.context));
    item.append(meta);
    let text = message.text;
    if (message.recalled) text = T.recalled;
    else if (message.kind in T.media && !text.startsWith("[")) text = text ? `${T.media[message.kind]} ${text}` : T.media[message.kind];
    item.append(el("div", message.recalled || message.kind in T.media ? "text media" : "text", text));
    list.append(item);
  }
  wrap.append(list);
  return wrap;
}

function fillGroup(name, citations) {
  const group = $(`#group-${name}`);
  const list = $("ol", group);
  list.replaceChildren(...citations.map(citationNode));
  $(".count", group).textContent = citations.length ? `(${citations.length})` : "";
  $(".empty", group).hidden = citations.length > 0;
}

function showAnswer(answer) {
  const answered = answer.status === "answered";
  $("#answer").hidden = false;
  $("#answer").dataset.status = answer.status;
  $("#no-answer").hidden = answered;
  $("#no-answer-text").textContent = answered ? "" : answer.text;
  const reason = !answered && answer.reason ? answer.reason : "";
  $("#no-answer-reason").hidden = !reason;
  $("#no-answer-reason").textContent = reason;
  const nearest = !answered && Array.isArray(answer.nearest) ? answer.nearest : [];
  $("#nearest-box").hidden = nearest.length === 0;
  $("#nearest").replaceChildren(...nearest.map(citationNode));
  $("#groups").hidden = !answered;
  $("#generated").hidden = !answer.generated_text;
  $("#generated-text").textContent = answer.generated_text || "";
  fillGroup("documents", answer.groups.documents);
  fillGroup("chat", answer.groups.chat);
  $("#compare").hidden = !(answer.groups.documents.length && answer.groups.chat.length);
}

function showHits(result) {
  $("#results").hidden = false;
  $("#results-count").textContent = result.hits.length ? T.hitsCount(result.hits.length) : T.noHits;
  $("#hits").replaceChildren(...result.hits.map(hitNode));
}

// ---- start page --------------------------------------------------------------------------------

function sourceItem(title, detail) {
  const item = el("li");
  item.append(el("span", "source-title", title), el("span", "muted small", detail));
  return item;
}

// The start page shows only while nothing has been asked: its data may arrive after a question was.
let startWanted = false;

async function showStart() {
  const start = $("#start");
  startWanted = true;
  try {
    const overview = await api("/api/overview");
    if (!startWanted) return;
    const stats = overview.stats;
    start.hidden = false;
    $("#start-empty").hidden = stats.chunks > 0;
    $("#start-empty").textContent = stats.chunks > 0 ? "" : T.empty(stats.location);
    const examples = overview.example_questions || [];
    $("#examples-box").hidden = examples.length === 0;
    $("#examples").replaceChildren(
      ...examples.map((question) => {
        const item = el("li");
        const button = el("button", "example", question);
        button.type = "button";
        button.addEventListener("click", () => {
          $("#q").value = question;
          $("#mode-ask").checked = true;
          showMode();
          run(question, "ask");
        });
        item.append(button);
        return item;
      }),
    );
    const conversations = $("#start-conversations");
    conversations.hidden = overview.conversations.length === 0;
    $("ul", conversations).replaceChildren(
      ...overview.conversations.map((c) => {
        const dates = day(c.first_message_at) === day(c.last_message_at)
          ? day(c.first_message_at)
          : `${day(c.first_message_at)} → ${day(c.last_message_at)}`;
        return sourceItem(c.title, `${T.kinds[c.kind] || c.kind} · ${T.messagesCount(c.messages)} · ${dates}`);
      }),
    );
    const documents = $("#start-documents");
    documents.hidden = overview.documents.length === 0;
    $("ul", documents).replaceChildren(
      ...overview.documents.map((d) => sourceItem(d.title, `${T.updated} ${day(d.updated_at)}`)),
    );
  } catch (error) {
    start.hidden = true;
    if (error.status !== 401) {
      $("#status").className = "status error";
      $("#status").textContent = `${T.error}: ${error.message}`;
    }
  }
}

// ---- wiring ------------------------------------------------------------------------------------

async function run(text, how, { push = true } = {}) {
  const status = $("#status");
  status.className = "status";
  status.textContent = T.searching;
  $("#ask-button").disabled = true;
  startWanted = false;
  $("#start").hidden = true;
  const modeSuffix = how === "search" ? "&mode=search" : "";
  if (push) history.pushState({ q: text }, "", `?q=${encodeURIComponent(text)}${modeSuffix}${langSuffix()}`);
  try {
    if (how === "search") {
      const result = await api(`/api/search?q=${encodeURIComponent(text)}&k=10`);
      $("#answer").hidden = true;
      showHits(result);
    } else {
      const answer = await api("/api/ask", { question: text });
      $("#results").hidden = true;
      showAnswer(answer);
    }
    status.textContent = "";
  } catch (error) {
    status.className = "status error";
    status.textContent = `${T.error}: ${error.message}`;
    $("#answer").hidden = true;
    $("#results").hidden = true;
  } finally {
    $("#ask-button").disabled = false;
  }
}

function langSuffix() {
  const forced = new URLSearchParams(location.search).get("lang");
  return forced ? `&lang=${encodeURIComponent(forced)}` : "";
}

async function showStats() {
  try {
    const stats = await api("/api/stats");
    $("#kb-stats").textContent = T.stats(stats);
  } catch {
    $("#kb-stats").textContent = "";
  }
}

function fromLocation() {
  const params = new URLSearchParams(location.search);
  const question = params.get("q");
  if (params.get("mode") === "search") $("#mode-search").checked = true;
  else $("#mode-ask").checked = true;
  showMode();
  if (question) {
    $("#q").value = question;
    run(question, mode(), { push: false });
  } else {
    $("#answer").hidden = true;
    $("#results").hidden = true;
    showStart();
    $("#q").focus();
  }
}

function start() {
  translatePage();
  const input = $("#q");
  for (const radio of document.querySelectorAll("input[name=mode]")) radio.addEventListener("change", showMode);
  $("#ask-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (text) run(text, mode());
  });
  $("#token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem("threadkeep-token", $("#token").value.trim());
    $("#token-form").hidden = true;
    showStats();
    fromLocation();
  });
  window.addEventListener("popstate", fromLocation);
  showStats();
  fromLocation();
}

document.addEventListener("DOMContentLoaded", start);
