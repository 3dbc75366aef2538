// threadkeep web page: asks /api/ask and shows the grouped answer as the server computed it.
// Labels, dates, notes and the refusal come from the server verbatim; this file only lays them out.
"use strict";

const STRINGS = {
  en: {
    placeholder: "Ask a question, e.g. how do I fix error 0x80070005?",
    ask: "Ask",
    searching: "Looking in the knowledge base…",
    documents: "Documents",
    chat: "Chat discussions",
    noDocuments: "Nothing in the documents.",
    noChat: "Nothing in the chats.",
    noAnswerTitle: "No answer in the knowledge base",
    generatedTitle: "Answer (worded by a model from the sources below)",
    compare: "Documents and chat are shown separately, each with its date: check which is more recent.",
    updated: "updated",
    resolved: "Resolved",
    workaround: "Unconfirmed",
    open: "Open: no conclusion",
    note: "Note",
    showThread: "Show the whole discussion",
    hideThread: "Hide the discussion",
    loadingThread: "Loading the discussion…",
    cited: "cited",
    citedCount: (n, total) => `${n} of ${total} messages cited`,
    recalled: "(recalled)",
    media: { image: "[image]", video: "[video]", voice: "[voice message]", file: "[file]", link: "[link]" },
    stats: (s) => `${s.conversations} conversations · ${s.messages} messages · ${s.documents} documents`,
    tokenLabel: "This server needs a token",
    tokenSave: "Use token",
    error: "Error",
    relevance: "relevance",
  },
  zh: {
    placeholder: "输入问题，例如：装客户端报 0x80070005 怎么办",
    ask: "提问",
    searching: "正在知识库中查找…",
    documents: "文档",
    chat: "聊天讨论",
    noDocuments: "文档中没有相关内容。",
    noChat: "聊天记录中没有相关讨论。",
    noAnswerTitle: "知识库中没有找到答案",
    generatedTitle: "回答（由模型根据下列来源组织语言）",
    compare: "文档与聊天分开列出并各自标注日期，请留意哪一方更新。",
    updated: "更新于",
    resolved: "已解决",
    workaround: "未确认",
    open: "未解决：当时没有结论",
    note: "注意",
    showThread: "查看完整对话",
    hideThread: "收起对话",
    loadingThread: "正在加载对话…",
    cited: "引用",
    citedCount: (n, total) => `共 ${total} 条消息，引用 ${n} 条`,
    recalled: "（已撤回）",
    media: { image: "[图片]", video: "[视频]", voice: "[语音]", file: "[文件]", link: "[链接]" },
    stats: (s) => `${s.conversations} 个会话 · ${s.messages} 条消息 · ${s.documents} 篇文档`,
    tokenLabel: "此服务器需要访问令牌",
    tokenSave: "使用令牌",
    error: "出错了",
    relevance: "相关度",
  },
};

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
const TRANSCRIPT_LINE = /^\[([^\]]+)\] ([^:]+): (.*)$/;

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

function translatePage() {
  document.documentElement.lang = LANG === "zh" ? "zh-CN" : "en";
  for (const node of document.querySelectorAll("[data-i18n]")) {
    const value = T[node.dataset.i18n];
    if (typeof value === "string") node.textContent = value;
  }
  for (const node of document.querySelectorAll("[data-i18n-placeholder]")) {
    node.placeholder = T[node.dataset.i18nPlaceholder];
  }
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

// ---- rendering ---------------------------------------------------------------------------------

function badge(state) {
  const span = el("span", `badge badge-${state}`, T[state] || state);
  span.dataset.state = state;
  return span;
}

function excerptNode(citation) {
  if (citation.source_type === "document") return el("p", "excerpt", citation.excerpt);
  const list = el("div", "excerpt chat-excerpt");
  for (const line of citation.excerpt.split("\n")) {
    const match = TRANSCRIPT_LINE.exec(line);
    const row = el("div", "line");
    if (match) {
      row.append(el("span", "when", match[1].slice(11) || match[1]), el("span", "who", match[2]), el("span", "what", match[3]));
    } else {
      row.append(el("span", "what", line));
    }
    list.append(row);
  }
  return list;
}

function citationNode(citation) {
  const item = el("li", `citation ${citation.source_type}`);
  item.dataset.chunkId = citation.chunk_id;

  const head = el("div", "citation-head");
  head.append(el("span", "title", citation.title || citation.source_ref));
  if (citation.source_type === "chat" && citation.resolution_state) head.append(badge(citation.resolution_state));
  const date = el("time", "date");
  date.dateTime = citation.date;
  if (citation.source_type === "document") {
    date.textContent = `${T.updated} ${day(citation.date)}`;
  } else {
    const start = day(citation.started_at);
    date.textContent = start && start !== day(citation.date) ? `${start} → ${day(citation.date)}` : day(citation.date);
  }
  head.append(date);
  item.append(head);

  item.append(el("p", "label", citation.label));
  item.append(excerptNode(citation));

  for (const note of citation.notes || []) {
    const p = el("p", "note");
    p.append(el("strong", null, `${T.note}: `), document.createTextNode(note));
    item.append(p);
  }

  if (citation.source_type === "chat") {
    const button = el("button", "expand", T.showThread);
    button.type = "button";
    button.setAttribute("aria-expanded", "false");
    const panel = el("div", "thread");
    panel.hidden = true;
    button.addEventListener("click", () => toggleThread(citation, button, panel));
    item.append(button, panel);
  }
  return item;
}

async function toggleThread(citation, button, panel) {
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
    const view = await api(`/api/thread?chunk_id=${encodeURIComponent(citation.chunk_id)}`);
    panel.replaceChildren(transcriptNode(view));
    panel.dataset.loaded = "1";
  } catch (error) {
    panel.replaceChildren(el("p", "error", `${T.error}: ${error.message}`));
  }
}

function transcriptNode(view) {
  const wrap = el("div", "transcript-wrap");
  const cited = view.messages.filter((m) => m.cited).length;
  wrap.append(el("p", "muted small", T.citedCount(cited, view.messages.length)));
  const list = el("ol", "transcript");
  let lastDay = "";
  for (const message of view.messages) {
    const item = el("li", message.cited ? "message cited" : "message");
    item.dataset.messageId = message.id;
    const meta = el("div", "meta");
    const when = el("time", "when");
    when.dateTime = message.sent_at;
    const thisDay = day(message.sent_at);
    when.textContent = thisDay !== lastDay ? `${thisDay} ${clock(message.sent_at)}` : clock(message.sent_at);
    lastDay = thisDay;
    meta.append(when, el("span", "who", message.sender_name || message.sender));
    if (message.cited) meta.append(el("span", "cited-mark", T.cited));
    item.append(meta);
    let text = message.text;
    if (message.recalled) text = T.recalled;
    else if (message.kind in T.media) text = text ? `${T.media[message.kind]} ${text}` : T.media[message.kind];
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
  $("#groups").hidden = !answered;
  $("#generated").hidden = !answer.generated_text;
  $("#generated-text").textContent = answer.generated_text || "";
  fillGroup("documents", answer.groups.documents);
  fillGroup("chat", answer.groups.chat);
  $("#compare").hidden = !(answer.groups.documents.length && answer.groups.chat.length);
}

// ---- wiring ------------------------------------------------------------------------------------

async function ask(question, { push = true } = {}) {
  const status = $("#status");
  status.className = "status";
  status.textContent = T.searching;
  $("#ask-button").disabled = true;
  if (push) history.pushState({ q: question }, "", `?q=${encodeURIComponent(question)}${langSuffix()}`);
  try {
    const answer = await api("/api/ask", { question });
    status.textContent = "";
    showAnswer(answer);
  } catch (error) {
    status.className = "status error";
    status.textContent = `${T.error}: ${error.message}`;
    $("#answer").hidden = true;
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

function start() {
  translatePage();
  const input = $("#q");
  $("#ask-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (question) ask(question);
  });
  $("#token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem("threadkeep-token", $("#token").value.trim());
    $("#token-form").hidden = true;
    showStats();
    if (input.value.trim()) ask(input.value.trim(), { push: false });
  });
  window.addEventListener("popstate", () => {
    const question = new URLSearchParams(location.search).get("q");
    if (question) {
      input.value = question;
      ask(question, { push: false });
    }
  });
  showStats();
  const initial = new URLSearchParams(location.search).get("q");
  if (initial) {
    input.value = initial;
    ask(initial, { push: false });
  } else {
    input.focus();
  }
}

document.addEventListener("DOMContentLoaded", start);
