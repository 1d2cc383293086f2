-- Headless test of an accept refused because memory now says otherwise on the proposal's subject,
-- against the real `cairn serve`.
--
--   nvim --headless --clean -u NONE -c "luafile editors/nvim/test/keep_both.lua"
--
-- Environment (set by tests/editors/test_nvim_memories.py):
--   CAIRN_TEST_PYTHON    interpreter that runs `-m cairn.server serve`
--   CAIRN_TEST_WS        a workspace where "Use pnpm, not npm, to install dependencies" was accepted
--                        and "Use npm to install dependencies" is pending
--   CAIRN_TEST_PROPOSAL  the id of the pending one
--
-- In the cockpit, a on the pending proposal is refused (E_PROPOSAL_STALE) and the message names the
-- cockpit's key to keep both, K, not the command line's flag; K then accepts it.  Every wait is
-- bounded.  Success prints "cairn keep-both: OK"; a failure "cairn keep-both: FAIL: ..." on stderr
-- and exit status 1.
local here = debug.getinfo(1, "S").source:sub(2)
package.path = vim.fn.fnamemodify(here, ":p:h:h") .. "/?.lua;" .. package.path

local TIMEOUT = 90000

local harness = dofile(vim.fn.fnamemodify(here, ":p:h") .. "/harness.lua")
local check = harness.check
local messages, errors = harness.messages, harness.errors

local function wait_for(what, pred)
  harness.wait_for(what, pred, TIMEOUT, false)
end

local function line_of(buf, pattern)
  for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if l:match(pattern) then
      return i, l
    end
  end
end

local function press(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), "x", false)
end

local function main()
  local cairn = require("cairn")
  local ws, id = os.getenv("CAIRN_TEST_WS"), os.getenv("CAIRN_TEST_PROPOSAL")
  cairn.setup({
    cmd = { os.getenv("CAIRN_TEST_PYTHON"), "-m", "cairn.server", "serve" },
    settings = { mode = "propose", provider = "extractive" },
  })
  local cockpit = require("cairn.cockpit")
  local buf
  cockpit.open(ws, "pending", function(b) buf = b end)
  wait_for("the Pending view", function() return buf ~= nil and line_of(buf, "^" .. id) ~= nil end)

  -- a: refused; the message names K (fails before: "(to keep both: accept --keep-both)", the CLI's flag)
  vim.api.nvim_win_set_cursor(0, { line_of(buf, "^" .. id), 0 })
  press("a")
  wait_for("the refusal", function() return #errors > 0 end)
  check(errors[1]:match("^cairn: E_PROPOSAL_STALE: .*" .. id .. " is stale"), "error: %s", errors[1])
  check(errors[1]:find("now says otherwise on the same subject (to keep both: K in the cockpit (:Cairn))", 1, true),
    "error: %s", errors[1])
  check(not errors[1]:find("--keep-both", 1, true), "error: %s", errors[1])
  table.remove(errors, 1)

  -- K: accepted, keeping both
  vim.api.nvim_win_set_cursor(0, { line_of(buf, "^" .. id), 0 })
  press("K")
  wait_for("the accept", function()
    for _, m in ipairs(messages) do
      if m:match(id) and m:match("applied") then
        return true
      end
    end
    return #errors > 0
  end)
  check(#errors == 0, "unexpected error: %s", errors[1] or "")
end

harness.run("keep-both", main)
