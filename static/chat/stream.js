// The conversation page's stream: one WebSocket, frames applied on the next
// animation frame, text appended (never re-parsed) while an answer streams.
// Protocol: see chat/frames.py.

const chat = document.getElementById("chat");
const list = document.getElementById("messages");
const composer = document.getElementById("composer");
const input = document.getElementById("composer-input");
const sendButton = document.getElementById("send-button");
const stopButton = document.getElementById("stop-button");
const connection = document.getElementById("connection");
const alertBox = document.getElementById("alert");
const template = document.getElementById("answer-template");

const CLOSE_CODES_FINAL = new Set([4401, 4403]);

let socket = null;
let lastSent = null; // kept until the server stores it, to restore on refusal
let retry = 0;
let streamingId = null;

// Per streaming message: its elements, pending text and code-point counts.
const live = new Map();
let frameScheduled = false;

function codePoints(text) {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

// crypto.randomUUID needs a secure context; teams often serve plain http on a LAN.
function newClientId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function showAlert(text) {
  alertBox.textContent = text;
  alertBox.hidden = !text;
}

function setBusy(busy) {
  stopButton.hidden = !busy;
  sendButton.disabled = busy;
}

function nearBottom() {
  return list.scrollHeight - list.scrollTop - list.clientHeight < 80;
}

function liveFor(article) {
  const id = Number(article.dataset.messageId);
  let state = live.get(id);
  if (!state) {
    const thinkingText = article.querySelector(".thinking-text");
    const answer = article.querySelector(".answer");
    state = {
      article,
      details: article.querySelector("details.thinking"),
      thinkingNode: thinkingText.appendChild(document.createTextNode("")),
      answerNode: answer.appendChild(document.createTextNode("")),
      pendingThinking: "",
      pendingContent: "",
      thinkingLength: Number(article.dataset.thinkingLength || 0),
      contentLength: Number(article.dataset.contentLength || 0),
    };
    live.set(id, state);
  }
  return state;
}

function articleFor(messageId) {
  let article = document.getElementById(`message-${messageId}`);
  if (!article) {
    article = template.content.firstElementChild.cloneNode(true);
    article.id = `message-${messageId}`;
    article.dataset.messageId = messageId;
    article.dataset.contentLength = "0";
    article.dataset.thinkingLength = "0";
    list.appendChild(article);
  }
  return article;
}

function flush() {
  frameScheduled = false;
  const stick = nearBottom();
  for (const state of live.values()) applyPending(state);
  if (stick) list.scrollTop = list.scrollHeight;
}

function applyPending(state) {
  if (state.pendingThinking) {
    state.details.hidden = false;
    state.thinkingNode.appendData(state.pendingThinking);
    state.pendingThinking = "";
  }
  if (state.pendingContent) {
    if (state.details.open && !state.article.dataset.answering) {
      state.details.open = false; // the answer started: fold the thoughts away
    }
    state.article.dataset.answering = "1";
    state.answerNode.appendData(state.pendingContent);
    state.pendingContent = "";
  }
}

function schedule() {
  if (!frameScheduled) {
    frameScheduled = true;
    requestAnimationFrame(flush);
  }
}

function replaceMessage(message) {
  const current = document.getElementById(message.dom_id);
  const holder = document.createElement("div");
  holder.innerHTML = message.html; // rendered and sanitized by the server
  const fresh = holder.firstElementChild;
  const state = live.get(message.id);
  if (state) applyPending(state); // the last deltas may still wait for their frame
  live.delete(message.id);
  const stick = nearBottom();
  if (current) current.replaceWith(fresh);
  else list.appendChild(fresh);
  if (stick) list.scrollTop = list.scrollHeight;
}

const handlers = {
  conversation(frame) {
    document.querySelector(".chat-header h1").textContent = frame.title;
    const link = document.querySelector('.conversation-list a[aria-current="page"]');
    if (link) link.textContent = frame.title;
    document.title = `${frame.title} · chatsite`;
  },
  message(frame) {
    if (lastSent && frame.message.client_id === lastSent.clientId) lastSent = null;
    replaceMessage(frame.message);
  },
  start(frame) {
    streamingId = frame.message_id;
    setBusy(true);
    liveFor(articleFor(frame.message_id));
  },
  thinking(frame) {
    const state = liveFor(articleFor(frame.message_id));
    state.pendingThinking += frame.delta;
    state.thinkingLength += codePoints(frame.delta);
    schedule();
  },
  content(frame) {
    const state = liveFor(articleFor(frame.message_id));
    state.pendingContent += frame.delta;
    state.contentLength += codePoints(frame.delta);
    schedule();
  },
  done(frame) {
    if (frame.message_id === streamingId) {
      streamingId = null;
      setBusy(false);
    }
  },
  error(frame) {
    showAlert(frame.detail);
    if (frame.message_id === null) {
      // Refused before anything was stored: give the text back.
      if (lastSent && !input.value) input.value = lastSent.content;
      lastSent = null;
      setBusy(streamingId !== null);
    }
  },
};

function resumeStreaming() {
  for (const article of list.querySelectorAll('article[data-status="streaming"]')) {
    const state = liveFor(article);
    socket.send(JSON.stringify({
      type: "resume",
      message_id: Number(article.dataset.messageId),
      offset: state.contentLength,
      thinking_offset: state.thinkingLength,
    }));
  }
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}${chat.dataset.wsPath}`);
  socket.addEventListener("open", () => {
    retry = 0;
    connection.textContent = "";
    chat.dataset.connected = "1";
    resumeStreaming();
  });
  socket.addEventListener("message", (event) => {
    const frame = JSON.parse(event.data);
    const handler = handlers[frame.type];
    if (handler) handler(frame);
  });
  socket.addEventListener("close", (event) => {
    delete chat.dataset.connected;
    if (CLOSE_CODES_FINAL.has(event.code)) {
      connection.textContent = event.code === 4401 ? "Signed out" : "Not allowed";
      return;
    }
    connection.textContent = "reconnecting…";
    const delay = Math.min(8000, 250 * 2 ** retry++);
    setTimeout(connect, delay);
  });
}

function send() {
  const content = input.value;
  if (!content.trim() || !socket || socket.readyState !== WebSocket.OPEN) return;
  showAlert("");
  const clientId = newClientId();
  lastSent = { clientId, content };
  socket.send(JSON.stringify({ type: "send", content, client_id: clientId }));
  input.value = "";
  setBusy(true);
}

composer.addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});
input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});
stopButton.addEventListener("click", () => {
  if (socket && socket.readyState === WebSocket.OPEN) {
    socket.send(JSON.stringify({ type: "stop" }));
  }
});

if (list.querySelector('article[data-status="streaming"]')) setBusy(true);
list.scrollTop = list.scrollHeight;
connect();
