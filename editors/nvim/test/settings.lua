-- Headless test: an option set back to nil returns to the config files' value
-- (the client sends null for it).
--
--   nvim --headless --clean -u NONE -c "luafile editors/nvim/test/settings.lua"
--
-- Environment (set by tests/editors/test_nvim_plugin.py; Neovim runs in the workspace):
--   CAIRN_TEST_WS   a repository whose .cairn/config.toml says mode = "manual"; the user's
--                   cairn config names an `openai` provider
local here = debug.getinfo(1, "S").source:sub(2)
local plugin_dir = vim.fn.fnamemodify(here, ":p:h:h")

local TIMEOUT = 90000

local harness = dofile(vim.fn.fnamemodify(here, ":p:h") .. "/harness.lua")
local check = harness.check

local function main()
  vim.opt.runtimepath:prepend(plugin_dir)
  vim.cmd("runtime plugin/cairn.lua")
  local cairn = require("cairn").setup({ settings = { mode = "propose", provider = "extractive" } })
  local function status()
    local done, answer = false, nil
    cairn.status(function(err, st)
      check(err == nil, "cairn/status failed: %s", err and err.message or "")
      done, answer = true, st
    end)
    harness.wait_for("cairn/status", function() return done end, TIMEOUT, true)
    return answer
  end
  -- ask again until `pred(status)` holds (a settings change applies in the server's order)
  local function until_status(what, pred)
    local deadline = vim.loop.now() + TIMEOUT
    while not pred(status()) do
      check(vim.loop.now() < deadline, "timed out waiting for %s", what)
      vim.wait(50)
    end
  end
  local st = status()
  check(st.mode == "propose" and st.provider == "extractive", "editor settings not in effect: %s %s",
    tostring(st.mode), tostring(st.provider))
  -- one option set back to nil: the workspace file's value
  cairn.set("mode", nil)
  until_status("mode from the config file", function(x) return x.mode == "manual" end)
  check(status().provider == "extractive", "provider changed with mode")
  -- setup again without the provider: the user's config file's value
  cairn.setup({ settings = {} })
  until_status("provider from the user's config", function(x) return x.provider == "openai" end)
  -- vim.NIL unsets too, and a value set again wins again
  cairn.set("provider", "extractive")
  until_status("provider set again", function(x) return x.provider == "extractive" end)
  cairn.set("provider", vim.NIL)
  until_status("provider unset with vim.NIL", function(x) return x.provider == "openai" end)
end

harness.run("settings", main)
