// ESLint over the front end's own modules, static/chat/*.js (never static/vendor/):
// scripts/lint-js.sh runs it from the repository's root with --config.
import js from "@eslint/js";
import globals from "globals";

// Browser globals that are also everyday local names: a forgotten declaration or
// a misspelt parameter would silently read the window's (the list of
// create-react-app's confusing-browser-globals, less `location` and `history`,
// which the modules mean). Write window.name when meant.
const CONFUSING_GLOBALS = [
  "addEventListener", "blur", "close", "closed", "confirm", "event", "external",
  "find", "focus", "frameElement", "frames", "innerHeight", "innerWidth",
  "length", "name", "open", "opener", "origin", "outerHeight",
  "outerWidth", "parent", "print", "removeEventListener", "screen", "scroll",
  "scrollBy", "scrollTo", "scrollX", "scrollY", "self", "status", "stop", "top",
];

export default [
  js.configs.recommended,
  {
    files: ["static/chat/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: { ...globals.browser, htmx: "readonly" },
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      eqeqeq: ["error", "always", { null: "ignore" }],
      "no-unused-vars": ["error", { args: "after-used", caughtErrors: "none" }],
      "array-callback-return": "error",
      "no-constructor-return": "error",
      "no-implicit-globals": "error",
      "no-implied-eval": "error",
      "no-new-func": "error",
      "no-eval": "error",
      "no-promise-executor-return": "error",
      "no-restricted-globals": ["error", ...CONFUSING_GLOBALS],
      "no-self-compare": "error",
      "no-template-curly-in-string": "error",
      "no-unmodified-loop-condition": "error",
      "no-unreachable-loop": "error",
      "no-unused-expressions": "error",
      // Only a use the module's own top level runs before the definition (a
      // temporal dead zone); functions that run later may name later constants.
      "no-use-before-define": ["error", { functions: false, classes: false, variables: false }],
      "no-var": "error",
    },
  },
  {
    files: ["static/chat/admin_stats.js"],
    languageOptions: { sourceType: "script" },
  },
];
