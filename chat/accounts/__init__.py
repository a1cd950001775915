"""Sign-in: through an identity provider (OpenID Connect, LDAP), the account a
provider's identity maps to, and the teams and role its groups map to; local
passwords; the throttle of failed sign-ins (`throttle`)."""
