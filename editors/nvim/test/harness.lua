-- Shared by the headless Neovim tests: failing checks, captured vim.notify
-- messages and bounded waits.  Loaded with dofile() by each test script.
local M = {}

-- Fail the run with a formatted message unless `ok`.
function M.check(ok, msg, ...)
  if not ok then
    error(string.format(msg, ...), 0)
  end
  return ok
end

-- vim.notify messages (the user commands report through it), split by level.
M.messages, M.errors = {}, {}
vim.notify = function(msg, level)
  table.insert(level == vim.log.levels.ERROR and M.errors or M.messages, msg)
end

-- Wait up to `timeout` ms for `pred`; with `fail_on_error`, an error message ends the wait and fails.
function M.wait_for(what, pred, timeout, fail_on_error)
  local ok = vim.wait(timeout, function()
    return (fail_on_error and #M.errors > 0) or pred()
  end, 20)
  if fail_on_error then
    M.check(#M.errors == 0, "error message while waiting for %s: %s", what, M.errors[1])
  end
  M.check(ok, "timed out waiting for %s", what)
end

-- The cairn clients now running.
function M.cairn_clients()
  local out = {}
  for _, c in ipairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do
    if c.name == "cairn" then
      table.insert(out, c)
    end
  end
  return out
end

-- Whether client `c` has stopped (method call from Neovim 0.11 on, field function before).
function M.is_stopped(c)
  if vim.fn.has("nvim-0.11") == 1 then return c:is_stopped() end
  return c.is_stopped()
end

-- Stop every cairn client (`force`: kill), then wait up to 30 s until none is left; true if none is.
function M.stop_all(force)
  for _, c in ipairs(M.cairn_clients()) do
    if vim.fn.has("nvim-0.11") == 1 then c:stop(force) else c.stop(force) end
  end
  return vim.wait(30000, function()
    return #M.cairn_clients() == 0
  end, 20)
end

-- Whether `cairn`'s client of buffer `buf` is initialized and has the buffer attached.
function M.attached(cairn, buf)
  local c = cairn.client(buf)
  return c ~= nil and c.initialized and c.attached_buffers[buf] ~= nil
end

-- Run test script `name`'s `main`, stop every cairn client (gracefully first, then by force), and leave
-- Neovim with "cairn NAME: OK" on stdout, or "cairn NAME: FAIL: …" on stderr and exit status 1.
function M.run(name, main)
  local ok, failure = xpcall(main, debug.traceback)
  if not M.stop_all(false) then
    M.stop_all(true)
  end
  if ok then
    io.stdout:write("cairn " .. name .. ": OK\n")
    vim.cmd("qall!")
  else
    io.stderr:write("cairn " .. name .. ": FAIL: " .. tostring(failure) .. "\n")
    vim.cmd("cquit 1")
  end
end

return M
