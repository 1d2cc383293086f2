-- Headless test of how the client speaks: one-line messages, a missing server program, a server
-- that dies at start.  Neovim's own vim.notify is kept (what users without a notification plugin
-- see); no cairn server runs.
--
--   nvim --headless --clean -u NONE -c "luafile editors/nvim/test/messages.lua"
--
-- Environment (set by tests/editors/test_nvim_fixes.py):
--   CAIRN_TEST_PYTHON    an interpreter (the dying server)
--   CAIRN_TEST_WS        an empty folder with .agents/memory/
local here = debug.getinfo(1, "S").source:sub(2)
package.path = vim.fn.fnamemodify(here, ":p:h:h") .. "/?.lua;" .. package.path
vim.opt.rtp:prepend(vim.fn.fnamemodify(here, ":p:h:h"))

local builtin = vim.notify
local harness = dofile(vim.fn.fnamemodify(here, ":p:h") .. "/harness.lua")
vim.notify = builtin -- the echo area, as users see it
local check = harness.check

local function messages()
  return vim.api.nvim_exec("messages", true)
end

local function count(text, pattern)
  local n = 0
  for _ in text:gmatch(pattern) do
    n = n + 1
  end
  return n
end

local function main()
  vim.cmd("runtime plugin/cairn.lua")
  local cairn = require("cairn")
  local ws = os.getenv("CAIRN_TEST_WS")
  vim.o.columns = 120

  -- 1. an accept naming long paths: one line that fits, the full text in a float and :CairnMessages
  -- (fails before: the whole text was echoed, wrapped, and waited for "Press ENTER")
  local echoed = {}
  local echo = vim.api.nvim_echo
  vim.api.nvim_echo = function(chunks, history, opts)
    table.insert(echoed, chunks)
    return echo(chunks, history, opts)
  end
  local written = {}
  for i = 1, 4 do
    table.insert(written, string.format(".agents/memory/a-rather-long-topic-name-number-%d.md", i))
  end
  local msg = require("cairn.commands").decision_message("cairn.accept",
    { result = { decisions = { { id = "p0123456789ab", state = "applied", written = written } } } })
  require("cairn.config").notify(msg)
  vim.api.nvim_echo = echo
  check(#echoed == 1 and #echoed[1] == 1, "echoed: %s", vim.inspect(echoed))
  local line = echoed[1][1][1]
  check(not line:find("\n") and vim.fn.strdisplaywidth(line) <= vim.v.echospace,
    "not one line that fits %d columns: %q", vim.v.echospace, line)
  check(line:find("^cairn: accepted: p0123456789ab applied") and line:find("…$"), "line: %q", line)
  local float
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= "" then
      float = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false), "\n")
    end
  end
  check(float == "cairn: " .. msg, "float: %s", tostring(float))
  vim.cmd("CairnMessages")
  local shown = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  check(shown:find(written[4], 1, true), ":CairnMessages: %s", shown)
  vim.cmd("close")

  -- 2. a missing program: said once, cleanly, however many memory files open
  -- (fails before: "Error detected while processing BufNewFile Autocommands" for each)
  cairn.setup({ cmd = { ws .. "/no-such-cairn", "serve" } })
  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/.agents/memory/one.md"))
  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/.agents/memory/two.md"))
  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/MEMORY.md"))
  harness.wait_for("the missing program's message", function()
    return messages():find("cairn not found", 1, true) ~= nil
  end, 10000)
  vim.wait(200, function() return false end, 20) -- let any other scheduled message through
  local m = messages()
  check(count(m, "cairn not found") == 1, "said %d times: %s", count(m, "cairn not found"), m)
  check(m:find("no%-such%-cairn"), "the program is not named: %s", m)
  check(not m:find("Error detected") and not m:find("Spawning language server"), "messages: %s", m)
  -- a command asked for explicitly answers (one clean line)
  local answered
  cairn.status(function(err) answered = err end)
  harness.wait_for("the status answer", function() return answered ~= nil end, 10000)
  check(tostring(answered.message):find("^cairn not found"), "status: %s", vim.inspect(answered))

  -- 3. a server that dies at start: its last stderr line is in the reason
  -- (fails before: "the server exited before it started (code 2)" alone)
  cairn.setup({ cmd = { os.getenv("CAIRN_TEST_PYTHON"), "-c",
    "import sys; sys.stderr.write('starting\\ncairn: E_CONFIG_INVALID: the test says no\\n'); sys.exit(2)" } })
  local err
  require("cairn.lsp").request(ws, "cairn/status", {}, function(e) err = e or {} end)
  harness.wait_for("the start failure", function() return err ~= nil end, 30000)
  check(tostring(err.message):find("the server exited before it started (code 2): "
    .. "cairn: E_CONFIG_INVALID: the test says no", 1, true), "reason: %s", vim.inspect(err))
end

harness.run("messages", main)
