-- GET /secure with the seeded bench account's Basic credentials: after the first, each is a
-- cache hit (one read of the account, no argon2).
request = function()
  return wrk.format("GET", "/secure", {
    ["Authorization"] = "Basic YmVuY2hAZXhhbXBsZS5jb206YmVuY2ggcGFzc3BocmFzZQ==",
  })
end
