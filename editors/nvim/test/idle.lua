-- Headless test of idle maintenance against the real `cairn serve`: with no key typed for
-- `idleMinutes`, the server gets `cairn/idle` and runs its idle jobs (cleanup among them).
--
--   nvim --headless --clean -u NONE -c "luafile editors/nvim/test/idle.lua"
--
-- Environment (set by tests/editors/test_nvim_fixes.py):
--   CAIRN_TEST_PYTHON    interpreter that runs `-m cairn.server serve`
--   CAIRN_TEST_WS        a git repository
local here = debug.getinfo(1, "S").source:sub(2)
package.path = vim.fn.fnamemodify(here, ":p:h:h") .. "/?.lua;" .. package.path
vim.opt.rtp:prepend(vim.fn.fnamemodify(here, ":p:h:h"))

local TIMEOUT = 90000
local harness = dofile(vim.fn.fnamemodify(here, ":p:h") .. "/harness.lua")
local check = harness.check

local function main()
  local logs = {}
  vim.lsp.handlers["window/logMessage"] = function(_, result)
    table.insert(logs, result and result.message or "")
  end
  vim.cmd("runtime plugin/cairn.lua")
  local cairn = require("cairn")
  -- 0.02 minutes: 1.2 s without a key (the server's idleMinutes is the same setting)
  cairn.setup({ cmd = { os.getenv("CAIRN_TEST_PYTHON"), "-m", "cairn.server", "serve" },
    settings = { idleMinutes = 0.02 } })
  vim.cmd("cd " .. vim.fn.fnameescape(os.getenv("CAIRN_TEST_WS")))
  local counted
  cairn.status(function(err, st) counted = err or st end)
  harness.wait_for("the server's status", function() return counted ~= nil end, TIMEOUT)
  check(counted.message == nil, "status: %s", vim.inspect(counted))
  -- fails before: Neovim never sent cairn/idle, no idle job ever ran
  harness.wait_for("an idle cleanup job", function()
    for _, line in ipairs(logs) do
      if line:match("^cairn: %S+ cleanup ") then
        return true
      end
    end
    return false
  end, TIMEOUT)
  check(require("cairn.idle").sent == 1, "cairn/idle sent %d times", require("cairn.idle").sent)
end

harness.run("idle", main)
