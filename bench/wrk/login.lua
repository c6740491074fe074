-- Right-password logins of the seeded bench account: argon2id once each, then a session and a
-- token written (the sign-in a person makes).
request = function()
  return wrk.format("POST", "/login", {
    ["Content-Type"] = "application/x-www-form-urlencoded",
  }, "email=bench%40example.com&password=bench+passphrase")
end
