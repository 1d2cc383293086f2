-- Headless test of the "Wire AGENT to read cairn memory" quick fix against the real `cairn serve`:
-- its answer is shown, a refusal with its code and message, a proposal by its id.
--
--   nvim --headless --clean -u NONE -c "luafile editors/nvim/test/wire.lua"
--
-- Environment (set by tests/editors/test_nvim_fixes.py):
--   CAIRN_TEST_PYTHON    interpreter that runs `-m cairn.server serve`
--   CAIRN_TEST_WS        a git repository whose AGENTS.md is not UTF-8
local here = debug.getinfo(1, "S").source:sub(2)
package.path = vim.fn.fnamemodify(here, ":p:h:h") .. "/?.lua;" .. package.path
vim.opt.rtp:prepend(vim.fn.fnamemodify(here, ":p:h:h"))

local TIMEOUT = 90000
local harness = dofile(vim.fn.fnamemodify(here, ":p:h") .. "/harness.lua")
local check = harness.check
local messages, errors = harness.messages, harness.errors

local function wait_for(what, pred)
  harness.wait_for(what, pred, TIMEOUT, false)
end

-- Run the buffer's wire quick fix as vim.lsp.buf.code_action() does once chosen.
local function run_wire(cairn, buf)
  local lsp = require("cairn.lsp")
  local client = cairn.client(buf)
  local action
  wait_for("the wire quick fix", function()
    local answer = lsp.call(client, "request_sync", "textDocument/codeAction", {
      textDocument = { uri = vim.uri_from_bufnr(buf) },
      range = { start = { line = 0, character = 0 }, ["end"] = { line = 0, character = 0 } },
      context = { diagnostics = {} } }, 5000, buf)
    for _, a in ipairs(answer and answer.result or {}) do
      if a.title:match("^Wire .* to read cairn memory") then
        action = a
      end
    end
    return action ~= nil
  end)
  local before = #messages + #errors
  local command = type(action.command) == "table" and action.command or action
  lsp.call(client, "request", "workspace/executeCommand",
    { command = command.command, arguments = command.arguments }, nil, buf)
  wait_for("the quick fix's message", function() return #messages + #errors > before end)
  check(#errors == 0, "error: %s", errors[1] or "")
  return messages[#messages]
end

local function main()
  vim.cmd("runtime plugin/cairn.lua")
  local cairn = require("cairn")
  local ws = os.getenv("CAIRN_TEST_WS")
  cairn.setup({ cmd = { os.getenv("CAIRN_TEST_PYTHON"), "-m", "cairn.server", "serve" } })
  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/AGENTS.md"))
  local buf = vim.api.nvim_get_current_buf()
  wait_for("the cairn client to attach", function() return harness.attached(cairn, buf) end)

  -- refused (status ok): the code and its message (fails before: nothing at all)
  local said = run_wire(cairn, buf)
  check(said == "cairn: wire: refused E_MEMORY_NOT_TEXT: AGENTS.md: not UTF-8 text", "said: %s", said)

  -- proposed: named by its id (fails before: nothing)
  local f = assert(io.open(ws .. "/AGENTS.md", "wb"))
  f:write("# Agents\n\nCodex runs make test\n")
  f:close()
  vim.cmd("edit!")
  said = run_wire(cairn, buf)
  check(said:match("^cairn: wire: proposed p%x+ %(Wire AGENTS%.md .*%), to accept in the cockpit$"), "said: %s", said)
end

harness.run("wire", main)
