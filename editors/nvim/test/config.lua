-- Headless test: the client sends only the settings the user set, so the
-- workspace's .cairn/config.toml decides the rest; and it restarts by itself
-- after a server crash.
--
--   nvim --headless --clean -u NONE -c "luafile editors/nvim/test/config.lua"
--
-- Environment (set by tests/editors/test_nvim_config.py):
--   CAIRN_TEST_PYTHON    interpreter that runs `-m cairn.server serve`
--   CAIRN_TEST_WS        a workspace whose .cairn/config.toml says mode = "manual" (a mode a repository may set untrusted)
--
-- Every wait is bounded (vim.wait).  Any failure prints "cairn config: FAIL: ..."
-- on stderr, stops the server and exits 1; success prints "cairn config: OK".
local here = debug.getinfo(1, "S").source:sub(2)
package.path = vim.fn.fnamemodify(here, ":p:h:h") .. "/?.lua;" .. package.path

local TIMEOUT = 90000

local harness = dofile(vim.fn.fnamemodify(here, ":p:h") .. "/harness.lua")
local check = harness.check

local function wait_for(what, pred)
  harness.wait_for(what, pred, TIMEOUT, true)
end

local is_stopped = harness.is_stopped

local function main()
  local cairn = require("cairn")
  local ws = os.getenv("CAIRN_TEST_WS")
  cairn.setup({ cmd = { os.getenv("CAIRN_TEST_PYTHON"), "-m", "cairn.server", "serve" } })
  vim.cmd("edit " .. vim.fn.fnameescape(ws .. "/AGENTS.md"))
  local buf = vim.api.nvim_get_current_buf()
  wait_for("the cairn client to attach", function() return harness.attached(cairn, buf) end)
  local client = cairn.client(buf)
  check(next(client.config.init_options) == nil, "initializationOptions sent: %s",
    vim.inspect(client.config.init_options))

  local function status()
    local done, answer = false, nil
    cairn.status(function(err, st)
      check(err == nil, "cairn/status failed: %s", err and err.message or "")
      done, answer = true, st
    end, buf)
    wait_for("cairn/status", function() return done end)
    return answer
  end
  -- the workspace's config file decides the mode
  check(status().mode == "manual", "mode is not the config file's manual")

  -- a crash: the client restarts by itself for the open memory file, settings unchanged
  local pid = vim.fn.trim(vim.fn.system({ "pgrep", "-P", tostring(vim.fn.getpid()), "-f", "cairn.server" }))
  check(pid:match("^%d+$") ~= nil, "cannot find the server process: %s", pid)
  vim.loop.kill(tonumber(pid), 9)
  wait_for("the crashed client to stop", function() return is_stopped(client) end)
  wait_for("a new client for the open memory file", function()
    local c = cairn.client(buf)
    return c ~= nil and c.id ~= client.id and c.initialized and c.attached_buffers[buf] and not is_stopped(c)
  end)
  check(status().mode == "manual", "mode after the restart is not the config file's manual")
end

harness.run("config", main)
