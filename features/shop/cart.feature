Feature: Shopping cart
  Shoppers collect products in a cart before they check out.

  Background:
    Given I open the shop
    And I accept the cookie banner

  Scenario: Add a product to the cart
    When I add the "Blue Mug" to the cart
    Then the cart link shows 1 item

  Scenario: An empty cart says so
    When I open the cart
    Then the cart says that it is empty
