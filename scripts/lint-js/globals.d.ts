// What static/chat/*.js use of the page's globals, for the type check only
// (tsconfig.json here): the vendored UMD libraries that templates/chat/_stream_head.html
// and templates/_base.html load (static/vendor/, scripts/vendor.sh), Django's
// JavaScript catalog, and the events htmx and the modules dispatch. Only what the
// modules call is declared; a new use is declared here first. A script, not a
// module: every name here is global, for the modules' JSDoc too.

/*
 * The types the modules share, named here: a module never imports another for
 * a type. The manifest storage (chatsite/storage.py) rewrites an
 * `import("./x.js")` in a comment as it does a real import, and types go both
 * ways between modules (socket.js and live_answer.js), a cycle it cannot hash.
 */
type Owner = import("../../static/chat/page.js").Owner;
type AttachedFile = import("../../static/chat/attachments.js").Item;
type LiveAnswer = import("../../static/chat/live_answer.js").LiveAnswer;
type ServerMessage = import("../../static/chat/socket.js").Message;
type ServerFrame = import("../../static/chat/socket.js").Frame;

/** markdown-it 14's parser, as markdown.js drives it (its rules and renderer). */
interface MarkdownToken {
  content: string;
  markup: string;
  block: boolean;
  map: [number, number] | null;
}

interface MarkdownInlineState {
  src: string;
  pos: number;
  posMax: number;
  push(type: string, tag: string, nesting: number): MarkdownToken;
}

interface MarkdownBlockState {
  src: string;
  bMarks: number[];
  eMarks: number[];
  tShift: number[];
  sCount: number[];
  blkIndent: number;
  line: number;
  push(type: string, tag: string, nesting: number): MarkdownToken;
}

type MarkdownRenderRule = (tokens: MarkdownToken[], index: number, options: unknown, env: MarkdownEnv) => string;

/** What markdown.js passes to render() and reads back in its rules. */
interface MarkdownEnv {
  pending?: boolean;
}

interface MarkdownIt {
  enable(rules: string[]): MarkdownIt;
  render(text: string, env?: MarkdownEnv): string;
  inline: { ruler: { before(name: string, rule: string, fn: (state: MarkdownInlineState, silent: boolean) => boolean): void } };
  block: {
    ruler: {
      before(
        name: string,
        rule: string,
        fn: (state: MarkdownBlockState, startLine: number, endLine: number, silent: boolean) => boolean,
        options?: { alt: string[] },
      ): void;
    };
  };
  renderer: { rules: Record<string, MarkdownRenderRule> };
}

/** DOMPurify 3's configuration, the keys markdown.js sets. */
interface PurifyConfig {
  RETURN_DOM_FRAGMENT?: boolean;
  IN_PLACE?: boolean;
  ADD_TAGS?: string[];
  ADD_ATTR?: string[];
  FORBID_TAGS?: string[];
}

interface DOMPurifyApi {
  sanitize(dirty: string | Node, config: PurifyConfig & { RETURN_DOM_FRAGMENT: true }): DocumentFragment;
  sanitize(dirty: Node, config: PurifyConfig & { IN_PLACE: true }): Node;
  addHook(hook: "afterSanitizeAttributes", fn: (node: Element) => void): void;
}

interface HighlightJs {
  getLanguage(name: string): object | undefined;
  highlight(code: string, options: { language: string; ignoreIllegals: boolean }): { value: string };
}

interface KatexApi {
  renderToString(
    tex: string,
    options: { displayMode: boolean; throwOnError: boolean; trust: boolean; strict: string; maxSize: number; maxExpand: number },
  ): string;
}

/** htmx 2: the calls the modules make (sidebar.js, search.js). */
interface HtmxApi {
  process(element: Element): void;
  trigger(element: Element, event: string): void;
  ajax(
    verb: string,
    path: string,
    context: { source?: Element; target?: Element | string; swap?: string; values?: Record<string, string> },
  ): Promise<void>;
}

/** The detail of htmx's events, as far as the modules read it. */
interface HtmxDetail {
  elt: HTMLElement;
  target: HTMLElement;
  xhr: XMLHttpRequest;
  successful: boolean;
  shouldSwap: boolean;
  isError: boolean;
}

/** The events htmx and the modules dispatch and listen to by name. */
interface ChatEvents {
  "htmx:afterRequest": CustomEvent<HtmxDetail>;
  "htmx:afterSettle": CustomEvent<HtmxDetail>;
  "htmx:afterSwap": CustomEvent<HtmxDetail>;
  "htmx:beforeRequest": CustomEvent<HtmxDetail>;
  "htmx:beforeSwap": CustomEvent<HtmxDetail>;
  "htmx:load": CustomEvent<HtmxDetail>;
  "htmx:oobBeforeSwap": CustomEvent<HtmxDetail>;
  "htmx:responseError": CustomEvent<HtmxDetail>;
  "htmx:sendError": CustomEvent<HtmxDetail>;
  /** socket.js: a conversation had a new message (the sidebar moves it to Today). */
  "chat:activity": CustomEvent<{ id: number }>;
  /** socket.js: the server refused a question (`code`, the shown `detail`). */
  "chat:refused": CustomEvent<{ code: string; detail: string }>;
  /** turn.js: the streaming answer ended ("done", "stopped" or "error"). */
  "chat:turn-ended": CustomEvent<{ status: string }>;
  /** tool_steps.js: the user allowed or denied a tool call (socket.js sends it). */
  "chat:approve": CustomEvent<{ message_id: number; call_id: string; allow: boolean }>;
  "chat:connected": Event;
  "older-messages": Event;
}

interface HTMLElementEventMap extends ChatEvents {}
interface DocumentEventMap extends ChatEvents {}

/** Django's JavaScript catalog (templates/_base.html), when the page loads it. */
declare var django:
  | {
      gettext?: (text: string) => string;
      ngettext?: (singular: string, plural: string, count: number) => string;
    }
  | undefined;
declare var htmx: HtmxApi;

interface Window {
  markdownit?: (preset: string, options: { html: boolean; linkify: boolean }) => MarkdownIt;
  DOMPurify?: DOMPurifyApi;
  hljs?: HighlightJs;
  katex?: KatexApi;
}
